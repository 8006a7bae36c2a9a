import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A README example is pasted into a user's project: whatever it writes must go under a temp dir it makes and
// removes. The sandbox gives the example its own working directory, TMPDIR and HOME, so every place it could
// write unasked is a folder this test owns and can list afterwards.

export interface Sandbox {
  /** The example's working directory: a user's project, which must stay as it was. */
  project: string;
  /** TMPDIR (and TMP, TEMP): what `os.tmpdir()` answers inside the example. */
  tmp: string;
  /** HOME: caches and configs a library would write without being asked. */
  home: string;
  env: NodeJS.ProcessEnv;
}

/** Folders for one example under `root`, and the environment that points the example at them. */
export function makeSandbox(root: string): Sandbox {
  const [project, tmp, home] = ['project', 'tmp', 'home'].map((name) => join(root, name)) as [string, string, string];
  for (const dir of [project, tmp, home]) mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {};
  // soup's own settings, XDG folders and Hugging Face settings would send writes to the developer's folders.
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(SOUP_|XDG_|HF_)/.test(key)) env[key] = value;
  }
  Object.assign(env, { TMPDIR: tmp, TMP: tmp, TEMP: tmp, HOME: home, USERPROFILE: home });
  // tsx keeps a transform cache in os.tmpdir(): the runner's, not the example's.
  Object.assign(env, { TSX_DISABLE_CACHE: '1', NO_COLOR: '1' });
  return { project, tmp, home, env };
}

/** Every path under `dir`, relative and sorted (folders end with `/`); [] when `dir` is empty or absent. */
export function listTree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        out.push(`${path}/`);
        walk(path);
      } else out.push(path);
    }
  };
  walk('');
  return out.sort();
}

/** The names an example gives mkdtemp (`'soup-example-'` of `join(tmpdir(), 'soup-example-')`, of a template, of
 * a path written out): what its own folders in a temp folder start with. */
export function mkdtempPrefixes(code: string): string[] {
  const re = /mkdtemp(?:Sync)?\([^\n]*?['"`]([^'"`\n]*?)['"`]\s*\)/g;
  return [...code.matchAll(re)].map((m) => m[1]!.split('/').pop()!).filter((name) => name.length > 0);
}

/**
 * Entries of the real temp folder (the runner's, not the sandbox's) named as mkdtemp names a folder with one of
 * `prefixes`: the prefix and six characters. Other tests run meanwhile, and their folders may start with the same
 * words (a supervisor test's `soup-supervise-stepdown-8N6Arb` beside the README's `soup-supervise-`).
 */
export function realTmpEntries(prefixes: string[]): Set<string> {
  if (prefixes.length === 0) return new Set();
  const made = (name: string, p: string): boolean =>
    name.startsWith(p) && /^[A-Za-z0-9]{6}$/.test(name.slice(p.length));
  return new Set(readdirSync(tmpdir()).filter((name) => prefixes.some((p) => made(name, p))));
}

/** `git status` of the repository's working tree: untracked and changed files, one line each. */
export function worktreeStatus(repoRoot: string): Set<string> {
  const r = spawnSync('git', ['status', '--porcelain=v1', '--untracked-files=all'], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`git status failed: ${r.stderr}`);
  return new Set(r.stdout.split('\n').filter((line) => line.length > 0));
}

/** What `after` has that `before` had not. */
export function added(before: Set<string>, after: Set<string>): string[] {
  return [...after].filter((x) => !before.has(x)).sort();
}
