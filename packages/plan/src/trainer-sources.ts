// The source files a trainer may import: an edit in `model.py` beside `train.py` changes what a
// trial measures as surely as an edit in `train.py`, so these hashes join the cache key. Python: the
// `.py` files under the script's folder and under each PYTHONPATH folder inside the working tree;
// Node: `.js/.mjs/.cjs/.ts` likewise, with NODE_PATH. Bounded: a trainer at the top of a large tree
// would cost a walk of everything, so past the bound the sources are "unknown" and nothing is cached.
import { createHash } from 'node:crypto';
import { type Dirent, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** At most this many source files are hashed; more: the sources are unknown. */
export const MAX_SOURCE_FILES = 2000;
/** At most this many bytes of source are hashed; more: the sources are unknown. */
export const MAX_SOURCE_BYTES = 64 * 2 ** 20;
/** At most this many folder entries (any file) are listed: a data folder beside the trainer is cheap, a disk is not. */
export const MAX_SOURCE_ENTRIES = 200_000;

const LANGUAGES = {
  python: { extensions: ['.py'], pathVar: 'PYTHONPATH' },
  node: { extensions: ['.js', '.mjs', '.cjs', '.ts'], pathVar: 'NODE_PATH' },
} as const;

/**
 * Folders no trainer imports its own code from: environments, caches, run logs that copy the code (wandb, mlruns).
 * Dot-folders and `checkpoint-<step>` folders (which may hold a model's remote code) are skipped too: each new one
 * would otherwise change the key of the run that wrote it.
 */
const SKIPPED_DIRS = new Set(['node_modules', '__pycache__', 'site-packages', 'venv', 'wandb', 'mlruns']);

/** What a trainer command may import, hashed. */
export interface TrainerSources {
  /** `{path: 12 hex of sha256}`, the path relative to the working directory (absolute outside it), sorted. */
  files: Record<string, string>;
  /** 12 hex over every `path@hash` (null: no sources, or unknown). */
  digest: string | null;
  /** Why the sources could not be listed (over the bound, unreadable): then nothing may be cached. */
  unknown: string | null;
}

function languageOf(file: string): keyof typeof LANGUAGES | null {
  const ext = extname(file);
  for (const [name, l] of Object.entries(LANGUAGES))
    if ((l.extensions as readonly string[]).includes(ext)) return name as keyof typeof LANGUAGES;
  return null;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

const inside = (dir: string, root: string): boolean => dir === root || dir.startsWith(root + sep);

/**
 * The sources a trainer command may import: for each script it names (an argv entry that is a `.py`, `.js`, `.mjs`,
 * `.cjs` or `.ts` file), its language's files under the script's folder and under each folder of the language's path
 * variable (PYTHONPATH, NODE_PATH) that lies inside `cwd`. Files the command names itself are left out (their hashes
 * are in the key already): pass their absolute paths as `named`.
 */
export function trainerSources(
  argv: readonly string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; named?: readonly string[] },
): TrainerSources {
  const roots = new Map<string, readonly string[]>(); // folder → extensions
  for (const arg of argv) {
    if (arg.includes('{')) continue;
    const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
    const candidate = eq >= 0 ? arg.slice(eq + 1) : arg;
    const lang = languageOf(candidate);
    if (lang === null) continue;
    const full = isAbsolute(candidate) ? candidate : resolve(o.cwd, candidate);
    if (!isFile(full)) continue;
    const { extensions, pathVar } = LANGUAGES[lang];
    roots.set(dirname(full), extensions);
    for (const p of (o.env[pathVar] ?? '').split(delimiter)) {
      if (p === '') continue;
      const dir = resolve(o.cwd, p);
      if (inside(dir, resolve(o.cwd))) roots.set(dir, extensions);
    }
  }
  const named = new Set(o.named ?? []);
  const found = new Set<string>();
  let bytes = 0;
  let seen = 0;
  const unknown = (why: string): TrainerSources => ({ files: {}, digest: null, unknown: why });
  // A folder inside another root is walked once, as part of the outer one.
  const outer = [...roots.keys()].filter((d) => ![...roots.keys()].some((r) => r !== d && inside(d, r)));
  for (const root of outer) {
    const extensions = roots.get(root)!;
    const stack = [root];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      let entries: Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch (err) {
        return unknown(`cannot list ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
      seen += entries.length;
      if (seen > MAX_SOURCE_ENTRIES)
        return unknown(`over ${MAX_SOURCE_ENTRIES} entries under ${root} (the trainer's imports are unknown)`);
      for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const { name } = entry;
        const path = join(dir, name);
        // A linked folder may loop or lead out of the tree: not followed.
        if (entry.isDirectory()) {
          if (!name.startsWith('.') && !SKIPPED_DIRS.has(name) && !/^checkpoint-\d+$/.test(name)) stack.push(path);
          continue;
        }
        if (!extensions.includes(extname(name)) || named.has(path) || found.has(path)) continue;
        let size: number;
        try {
          const st = statSync(path);
          if (!st.isFile()) continue;
          size = st.size;
        } catch {
          continue;
        }
        found.add(path);
        bytes += size;
        if (found.size > MAX_SOURCE_FILES)
          return unknown(`over ${MAX_SOURCE_FILES} source files under ${root} (the trainer's imports are unknown)`);
        if (bytes > MAX_SOURCE_BYTES)
          return unknown(
            `over ${MAX_SOURCE_BYTES / 2 ** 20} MiB of source under ${root} (the trainer's imports are unknown)`,
          );
      }
    }
  }
  const files: Record<string, string> = {};
  const cwd = resolve(o.cwd);
  for (const path of [...found].sort()) {
    const rel = relative(cwd, path);
    const name = rel.startsWith('..') || isAbsolute(rel) ? path : rel;
    try {
      files[name] = createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 12);
    } catch (err) {
      return unknown(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  }
  const list = Object.entries(files).map(([n, h]) => `${n}@${h}`);
  const digest = list.length === 0 ? null : createHash('sha256').update(list.join('\n')).digest('hex').slice(0, 12);
  return { files, digest, unknown: null };
}
