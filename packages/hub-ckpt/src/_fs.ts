import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, readlink, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { UnsafeLinkError } from './errors';
import { basename, dirname, join, sep } from 'node:path';
import { Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Names starting with this are a store's own temp files and never listed. */
export const TMP_PREFIX = '.soup-';

/**
 * sha256 and size of a local file, streamed; with `gitBlobSizeBytes` (the size the file is expected to have),
 * its git blob id too (sha1 of `blob <size>\0` + bytes), in the same pass. `gitSha1` is absent when the file
 * did not have that size.
 */
export async function hashFile(
  path: string,
  gitBlobSizeBytes?: number,
): Promise<{ sha256: string; sizeBytes: number; gitSha1?: string }> {
  const hash = createHash('sha256');
  const sha1 = gitBlobSizeBytes === undefined ? undefined : createHash('sha1').update(`blob ${gitBlobSizeBytes}\0`);
  let sizeBytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    hash.update(chunk as Buffer);
    sha1?.update(chunk as Buffer);
    sizeBytes += (chunk as Buffer).length;
  }
  const gitSha1 = sha1 !== undefined && sizeBytes === gitBlobSizeBytes ? sha1.digest('hex') : undefined;
  return { sha256: hash.digest('hex'), sizeBytes, ...(gitSha1 === undefined ? {} : { gitSha1 }) };
}

/**
 * Identity of a file (a bigint stat): what changes whenever its bytes can have changed. ctime moves on every write and
 * cannot be set back by a user, so a file rewritten in place with its old size and mtime restored has another.
 */
export function identityOf(s: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A regular file found under a pushed folder: its relative name and the real path to read it from. */
export interface WalkedFile {
  /** `/`-separated path relative to the folder (the name as it will be stored). */
  name: string;
  /** Absolute real path of the content (a link inside the folder resolves to its target, itself inside). */
  realPath: string;
}

/**
 * Every regular file under `dir`, sorted by name. A symbolic link is followed only when its target,
 * fully resolved, lies inside `dir`; one that leaves the folder, a loop and a dangling link throw
 * UnsafeLinkError naming the link and its target, before anything is read. An entry `skip` answers true for
 * (its `/`-separated relative name) is left out, a folder with everything under it, before any link is followed.
 */
export async function walkFiles(dir: string, skip?: (name: string) => boolean): Promise<WalkedFile[]> {
  const rootReal = await realpath(dir);
  const out: WalkedFile[] = [];
  const inside = (p: string): boolean =>
    p === rootReal || p.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep);
  async function walk(abs: string, rel: string, seen: ReadonlySet<string>): Promise<void> {
    const entries = await readdir(abs, { withFileTypes: true });
    for (const e of entries) {
      const childAbs = join(abs, e.name);
      const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
      if (skip?.(childRel)) continue;
      let real = childAbs;
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      if (e.isSymbolicLink()) {
        const target = await readlink(childAbs).catch(() => '?');
        try {
          real = await realpath(childAbs);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          throw new UnsafeLinkError({
            link: childAbs,
            target,
            reason: code === 'ELOOP' ? 'loop' : 'dangling',
            cause: err,
          });
        }
        if (!inside(real))
          throw new UnsafeLinkError({ link: childAbs, target, reason: 'outside', resolved: real, root: rootReal });
        const st = await stat(real);
        isDir = st.isDirectory();
        isFile = st.isFile();
        if (isDir && (seen.has(real) || real === rootReal))
          throw new UnsafeLinkError({ link: childAbs, target, reason: 'loop' });
      }
      // `abs` is a real path, so an entry that is not a link is its own real path.
      if (isDir) await walk(real, childRel, new Set([...seen, real]));
      else if (isFile) out.push({ name: childRel, realPath: real });
    }
  }
  await walk(rootReal, '', new Set([rootReal]));
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
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
export async function writeFileAtomic(
  path: string,
  bytes: Uint8Array,
  beforeRename?: () => Promise<void>,
): Promise<void> {
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
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR')
      return false;
    throw err;
  }
}

export async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR')
      return false;
    throw err;
  }
}

/**
 * Streams `source` into `sink` (or discards it when `sink` is null), hashing every byte on the way:
 * the sha256 and size of what was actually read, for a pull that checks while it writes.
 */
export async function hashWhileStreaming(
  source: Readable,
  sink: NodeJS.WritableStream | null,
  signal: AbortSignal | undefined,
): Promise<{ sizeBytes: number; sha256: string }> {
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
