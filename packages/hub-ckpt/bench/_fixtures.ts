// Deterministic checkpoint folders for tests, the crash harness and the bench (no vitest imports).
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Deterministic pseudo-random bytes for (seed) — xorshift32, fast enough for tens of MiB. */
export function seededBytes(seed: string, sizeBytes: number): Buffer {
  const buf = Buffer.allocUnsafe(sizeBytes);
  let x = createHash('sha256').update(seed).digest().readUInt32LE(0) || 0x9e3779b9;
  let i = 0;
  for (; i + 4 <= sizeBytes; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf.writeUInt32LE(x, i);
  }
  for (; i < sizeBytes; i++) buf[i] = (x >>> ((i % 4) * 8)) & 0xff;
  return buf;
}

export interface CheckpointSizes {
  modelBytes: number;
  optimizerBytes: number;
}

/** The files a toy trainer writes at `step` (content depends only on step, run, sizes and salt). */
export function checkpointContent(
  step: number,
  run: string,
  sizes: CheckpointSizes,
  salt = '',
): Record<string, Buffer> {
  return {
    'model.safetensors': seededBytes(`${run}:model:${step}:${salt}`, sizes.modelBytes),
    'optimizer.safetensors': seededBytes(`${run}:optim:${step}:${salt}`, sizes.optimizerBytes),
    'trainer_state.json': Buffer.from(`${JSON.stringify({ global_step: step, run }, null, 2)}\n`),
    'extra/rng_state.json': Buffer.from(JSON.stringify({ seed: step * 7919 })),
  };
}

export function sha256(buf: Uint8Array): string {
  return createHash('sha256').update(buf).digest('hex');
}

/** Writes `<root>/checkpoint-<step>/` and returns its path and the expected sha256 per file. */
export function writeCheckpoint(p: {
  root: string;
  step: number;
  run: string;
  sizes?: Partial<CheckpointSizes>;
  salt?: string;
}): {
  dir: string;
  hashes: Record<string, string>;
} {
  const sizes = { modelBytes: 48_000, optimizerBytes: 16_000, ...p.sizes };
  const dir = join(p.root, `checkpoint-${p.step}`);
  const hashes: Record<string, string> = {};
  for (const [name, content] of Object.entries(checkpointContent(p.step, p.run, sizes, p.salt))) {
    const file = join(dir, ...name.split('/'));
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, content);
    hashes[name] = sha256(content);
  }
  return { dir, hashes };
}
