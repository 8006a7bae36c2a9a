// Test-only helpers (not exported): the real bin, the example trainers, fake checkpoint folders, store reads.
import { readSafetensors } from '@soup/onnx-train';
import { runNode, runProcess, spawnUntil, type ChildResult } from '@soup/test-utils';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bin under test; SOUP_TEST_BIN runs the same tests against another build (e.g. the code before a fix). */
export const SOUP_BIN = process.env.SOUP_TEST_BIN ?? fileURLToPath(new URL('../bin/soup.js', import.meta.url));
export const NODE_TRAINER = fileURLToPath(new URL('../../../examples/node-trainer/train.mjs', import.meta.url));
export const TORCH_TRAINER = fileURLToPath(new URL('../../../examples/torch-trainer/train.py', import.meta.url));
import { PYTHON } from '@soup/test-utils';

export { PYTHON, torchMissing } from '@soup/test-utils';

/** The Node trainer's argv with placeholders, HF Trainer flags. */
export function nodeTrainerArgv(p: { maxSteps: number; saveSteps: number; extra?: string[] }): string[] {
  return [
    process.execPath,
    NODE_TRAINER,
    '--output_dir',
    '{output_dir}',
    '--per_device_train_batch_size',
    '{batch_size}',
    '--max_steps',
    String(p.maxSteps),
    '--save_steps',
    String(p.saveSteps),
    '--resume_from_checkpoint',
    '{resume_from}',
    ...(p.extra ?? []),
  ];
}

/** The same trainer run alone (no soup), uninterrupted: its final weights are the reference. */
export async function referenceRun(
  cwd: string,
  argv: string[],
  batchSize: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return sha256File(
    join(await referenceOutput(cwd, argv, { '{batch_size}': String(batchSize) }, env), 'model.safetensors'),
  );
}

/**
 * Runs the trainer alone with these placeholder values (and {output_dir}, no {resume_from}); returns its output folder.
 */
export async function referenceOutput(
  cwd: string,
  argv: string[],
  values: Record<string, string>,
  env: NodeJS.ProcessEnv = process.env,
  name = 'reference-out',
): Promise<string> {
  const out = join(cwd, name);
  const expanded = argv
    .map((a) => Object.entries({ ...values, '{output_dir}': out }).reduce((x, [k, v]) => x.replace(k, v), a))
    .filter((a, i, all) => a !== '{resume_from}' && all[i + 1] !== '{resume_from}');
  const r = await runProcess(expanded[0]!, expanded.slice(1), { cwd, env, timeoutMs: 240_000 });
  if (r.code !== 0) throw new Error(`reference run failed (${r.code}): ${r.stderr.slice(-2000)}`);
  return out;
}

/** The largest absolute difference between two safetensors files' tensors (same names). */
/** The PyTorch trainer's argv with placeholders, HF Trainer flags (the twin of {@link nodeTrainerArgv}). */
export function torchTrainerArgv(p: { maxSteps: number; saveSteps: number; extra?: string[] }): string[] {
  return [PYTHON, TORCH_TRAINER, ...nodeTrainerArgv(p).slice(2)];
}

export function maxAbsDiff(a: string, b: string): number {
  const x = readSafetensors(a).tensors;
  const y = readSafetensors(b).tensors;
  if (x.size === 0 || x.size !== y.size)
    throw new Error(`${a} and ${b} hold different tensors (${x.size} vs ${y.size})`);
  let worst = 0;
  for (const [name, t] of x) {
    const u = y.get(name);
    if (!u || u.data.length !== t.data.length) throw new Error(`${name}: missing or another shape in ${b}`);
    for (let i = 0; i < t.data.length; i++) worst = Math.max(worst, Math.abs(Number(t.data[i]) - Number(u.data[i])));
  }
  return worst;
}

/** The RUN_JSON line of a soup run / train output. */
export function runJsonOf<T = Record<string, unknown>>(stdout: string): T {
  const line = stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
  if (!line) throw new Error(`no RUN_JSON line in:\n${stdout.slice(-3000)}`);
  return JSON.parse(line.slice('RUN_JSON '.length)) as T;
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

export function soupEnv(cwd: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: cwd,
    NO_COLOR: '1',
    SOUP_BATCH_CACHE_PATH: join(cwd, 'batch_cache.json'),
    ...extra,
  };
}

/** Runs `soup run <options> -- <argv>` to the end. */
export function soupRun(
  cwd: string,
  options: string[],
  argv: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 180_000,
): Promise<ChildResult> {
  return runNode([SOUP_BIN, 'run', ...options, '--', ...argv], { cwd, env, timeoutMs });
}

/** Starts `soup run` and resolves once its stdout matches `marker`. */
export function soupRunUntil(cwd: string, options: string[], argv: string[], env: NodeJS.ProcessEnv, marker: RegExp) {
  return spawnUntil(process.execPath, [SOUP_BIN, 'run', ...options, '--', ...argv], marker, {
    cwd,
    env,
    timeoutMs: 180_000,
  });
}

/** The trainer pid soup printed. */
export function trainerPid(output: string): number {
  const m = /launched trainer \(pid (\d+)\)/.exec(output);
  if (!m) throw new Error(`no trainer pid in: ${output.slice(-1000)}`);
  return Number(m[1]);
}

export function readJson<T = Record<string, unknown>>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** A directory store's latest.json, or null. */
export function pointerOf(
  storeDir: string,
): { step: number; path_in_repo: string; run: string; terminal: boolean } | null {
  const p = join(storeDir, 'latest.json');
  return existsSync(p) ? readJson(p) : null;
}

/** A one-tensor safetensors file (4 zero bytes: model weights by content) as a JavaScript expression. */
export const TINY_SAFETENSORS_JS =
  '(() => { const h = Buffer.from(\'{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}\'); ' +
  'const n = Buffer.alloc(8); n.writeBigUInt64LE(BigInt(h.length)); ' +
  'return Buffer.concat([n, h, Buffer.alloc(4)]); })()';

/** A trainer-style `<cwd>/<root>/checkpoint-<step>/`: random weights and a `trainer_state.json` with `global_step`. */
export function writeFakeCheckpoint(
  cwd: string,
  step: number,
  opts: { root?: string; modelBytes?: number } = {},
): string {
  const dir = join(cwd, opts.root ?? 'out', `checkpoint-${step}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'model.safetensors'), randomBytes(opts.modelBytes ?? 50_000));
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: step }));
  return dir;
}

/**
 * The memory keys anywhere in a RUN_JSON result, and those of them in another unit than bytes: one unit of memory in
 * the whole result (`*_bytes`), never a rounded MB beside them.
 */
export function memoryKeysOf(json: unknown): { all: string[]; notBytes: string[] } {
  const keysOf = (x: unknown): string[] =>
    x !== null && typeof x === 'object' ? Object.entries(x).flatMap(([k, v]) => [k, ...keysOf(v)]) : [];
  const all = keysOf(json).filter((k) => /(^|_)(peak|rss|memory|budget|headroom)(_|$)/.test(k));
  const notBytes = all.filter((k) => !/_bytes$/.test(k) && !/^(memory|in_session_peak)$|_(at|step|source)$/.test(k));
  return { all, notBytes };
}

/** The steps of the checkpoint folders in the directory store `<cwd>/store`, ascending. */
export function storeSteps(cwd: string): number[] {
  const ckpt = join(cwd, 'store', 'ckpt');
  if (!existsSync(ckpt)) return [];
  return readdirSync(ckpt)
    .map((n) => Number(/^checkpoint-(\d+)$/.exec(n)?.[1]))
    .filter((n) => Number.isInteger(n))
    .sort((a, b) => a - b);
}
