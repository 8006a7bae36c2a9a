import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Names starting with this are a store's own temp files and never listed. */
export const TMP_PREFIX = '.soup-';

/** sha256 and size of a local file, streamed. */
export async function hashFile(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    hash.update(chunk as Buffer);
    sizeBytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), sizeBytes };
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Every regular file under `dir` (following symlinks), as sorted `/`-separated relative paths. */
export async function walkFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(abs: string, rel: string): Promise<void> {
    const entries = await readdir(abs, { withFileTypes: true });
    for (const e of entries) {
      const childAbs = join(abs, e.name);
      const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
      const s = e.isSymbolicLink() ? await stat(childAbs) : e;
      if (s.isDirectory()) await walk(childAbs, childRel);
      else if (s.isFile()) out.push(childRel);
    }
  }
  await walk(dir, '');
  return out.sort();
}

export async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } catch (err) {
    // Some file systems refuse fsync on directories (EINVAL/EISDIR/EPERM): nothing more we can do there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'EBADF') throw err;
  } finally {
    await fh.close();
  }
}

/** Writes bytes to a temp file beside `path`, fsyncs it, renames it over `path`, fsyncs the folder. */
export async function writeFileAtomic(path: string, bytes: Uint8Array, beforeRename?: () => Promise<void>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `${TMP_PREFIX}${basename(path)}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await writeFile(tmp, bytes);
    await fsyncPath(tmp);
    if (beforeRename) await beforeRename();
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncPath(dirname(path));
}

/** Copies a file and fsyncs the copy. */
export async function copyFileDurable(src: string, dest: string): Promise<void> {
  await mkdir(dirname(dest), { recursive: true });
  await copyFile(src, dest);
  await fsyncPath(dest);
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}

export async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw err;
  }
}

/**
 * Streams `source` into `sink` (or discards it when `sink` is null), hashing every byte on the way:
 * the sha256 and size of what was actually read, for a pull that checks while it writes.
 */
export async function hashWhileStreaming(source: Readable, sink: NodeJS.WritableStream | null, signal: AbortSignal | undefined): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      sizeBytes += chunk.length;
      cb(null, sink ? chunk : undefined);
    },
  });
  const opts = signal ? { signal } : {};
  await pipeline(source, tap, sink ?? new Writable({ write: (_c, _e, cb) => cb() }), opts);
  return { sizeBytes, sha256: hash.digest('hex') };
}
