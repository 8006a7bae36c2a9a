import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** temp file in the same directory → fsync → rename; the temp file is removed on failure. */
export function writeFileAtomic(path: string, data: Uint8Array | string): void {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fd = openSync(tmp, 'wx', 0o644);
    try {
      const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      let off = 0;
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** The newest ORT profile written with file prefix `prefix` (`<prefix>_<time>.json`); undefined when there is none. */
export function newestProfile(prefix: string): string | undefined {
  const full = resolve(prefix);
  const dir = dirname(full);
  const base = `${basename(full)}_`;
  let best: { path: string; mtimeMs: number } | undefined;
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(base) || !f.endsWith('.json')) continue;
    const path = join(dir, f);
    const { mtimeMs } = statSync(path);
    if (!best || mtimeMs >= best.mtimeMs) best = { path, mtimeMs };
  }
  return best?.path;
}
