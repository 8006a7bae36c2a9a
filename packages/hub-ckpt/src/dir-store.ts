import { randomBytes } from 'node:crypto';
import { constants, createReadStream, createWriteStream, type Dirent, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ConcurrentWriteError, DiskFullError, LinkedEntryError, StoreError } from './errors';
import { isDiskFull } from './is-disk-full';
import { describeWriter } from './_describe-writer';
import { fsyncPath, hashWhileStreaming, isDirectory, sha256Hex, TMP_PREFIX } from './_fs';
import { lockCommit, pidAlive } from './_dir-commit-lock';
import { assertSafeName } from './_paths';
import { type StoredHash, StoredHashes, stageCopy } from './_dir-stage';
import { DirStaging } from './_dir-staging';
import type { CheckpointStore, LocalStaging, StoreCommitParams, StoreEntry } from './types';

export interface DirStoreOptions {
  /** The directory that plays the repo (local disk, NFS, a mounted bucket). Created on first push. */
  root: string;
}

const STAGING = `${TMP_PREFIX}staging`;
const STAGE_AT_ONCE = 4;
const NOFOLLOW_READ = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * A checkpoint store over a directory, with the same semantics as the Hub: every put is staged
 * and fsynced, then renamed into place (atomic per file), each folder is fsynced after its renames,
 * deletes happen after puts. One writer per directory.
 *
 * It never follows a symbolic link below its root: listing, reading, hashing, downloading, renaming
 * and deleting check every path component with lstat (files are opened with O_NOFOLLOW), and a linked
 * entry is refused with LinkedEntryError, so nothing outside the root is read, written or deleted.
 */
export class DirStore implements CheckpointStore {
  readonly kind = 'dir' as const;
  /** Absolute root directory. */
  readonly root: string;
  readonly description: string;
  // A plain field, not #private: callers wrap a store with Object.create(store), and #fields do not pass through.
  private readonly stored = new StoredHashes();

  constructor(opts: DirStoreOptions) {
    if (typeof opts.root !== 'string' || opts.root === '') {
      throw new StoreError('DirStore: root must be a non-empty directory path');
    }
    this.root = resolve(opts.root);
    this.description = `dir ${this.root}`;
  }

  /**
   * The absolute path of a repo path, after checking that no existing component below the root is a
   * symbolic link. Returns the lstat of the full path (null when it does not exist).
   */
  private async resolvePath(path: string): Promise<{ abs: string; stats: Stats | null }> {
    assertSafeName(path);
    const segs = path.split('/');
    let abs = this.root;
    for (let i = 0; i < segs.length; i++) {
      abs = join(abs, segs[i] as string);
      let st: Stats;
      try {
        st = await lstat(abs);
      } catch (err) {
        if (isMissing(err)) return { abs: join(this.root, ...segs), stats: null };
        throw new StoreError(`directory store: lstat ${abs} failed: ${(err as Error).message}`, { cause: err });
      }
      if (st.isSymbolicLink()) throw new LinkedEntryError(abs);
      if (i === segs.length - 1) return { abs, stats: st };
      if (!st.isDirectory()) return { abs: join(this.root, ...segs), stats: null };
    }
    return { abs, stats: null };
  }

  /** Opens a regular file for reading without following a link; null when missing. */
  private async openFile(path: string): Promise<{ fh: Awaited<ReturnType<typeof open>>; size: number } | null> {
    const { abs, stats } = await this.resolvePath(path);
    if (stats === null || !stats.isFile()) return null;
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(abs, NOFOLLOW_READ);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new LinkedEntryError(abs, { cause: err });
      if (isMissing(err)) return null;
      throw new StoreError(`directory store: open ${path} in ${this.root} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      return null;
    }
    return { fh, size: st.size };
  }

  async exists(): Promise<boolean> {
    return isDirectory(this.root);
  }

  async create(): Promise<void> {
    await wrap(`create ${this.root}`, async () => {
      await mkdir(this.root, { recursive: true });
      await fsyncPath(dirname(this.root));
    });
  }

  async list(params: { prefix: string }): Promise<StoreEntry[]> {
    const prefix = params.prefix.replace(/\/+$/, '');
    let start = this.root;
    if (prefix !== '') {
      const r = await this.resolvePath(prefix);
      if (r.stats === null || !r.stats.isDirectory()) return [];
      start = r.abs;
    }
    const out: StoreEntry[] = [];
    const walk = async (abs: string, rel: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(abs, { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith(TMP_PREFIX)) continue;
        const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
        const childAbs = join(abs, e.name);
        if (e.isSymbolicLink()) throw new LinkedEntryError(childAbs);
        if (e.isDirectory()) await walk(childAbs, childRel);
        else if (e.isFile()) {
          const st = await lstat(childAbs);
          if (st.isSymbolicLink()) throw new LinkedEntryError(childAbs);
          out.push({ path: childRel, sizeBytes: st.size });
        }
      }
    };
    await wrap(`list ${prefix || '/'}`, () => walk(start, prefix));
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async stat(params: { paths: string[]; times?: boolean }): Promise<StoreEntry[]> {
    const out: StoreEntry[] = [];
    for (const path of params.paths) {
      const { stats } = await this.resolvePath(path);
      if (!stats?.isFile()) continue;
      out.push({ path, sizeBytes: stats.size, ...(params.times ? { modifiedAt: stats.mtime.toISOString() } : {}) });
    }
    return out;
  }

  async readFile(params: { path: string }): Promise<Uint8Array | null> {
    const f = await this.openFile(params.path);
    if (f === null) return null;
    try {
      return new Uint8Array(await f.fh.readFile());
    } catch (err) {
      throw new StoreError(`read ${params.path} in ${this.root}: ${(err as Error).message}`, { cause: err });
    } finally {
      await f.fh.close();
    }
  }

  private async streamTo(
    path: string,
    sink: NodeJS.WritableStream | null,
    signal: AbortSignal | undefined,
  ): Promise<{ sizeBytes: number; sha256: string } | null> {
    const f = await this.openFile(path);
    if (f === null) return null;
    if (sink === null) {
      // This store re-read the file right after writing it, and nothing has written to it since.
      const known = await this.stored.lookup(join(this.root, ...path.split('/')), f.fh).catch(async (err) => {
        await f.fh.close();
        throw err;
      });
      if (known !== null) {
        await f.fh.close();
        return known;
      }
    }
    const source = createReadStream('', { fd: f.fh, highWaterMark: 1024 * 1024, autoClose: true });
    return hashWhileStreaming(source, sink, signal);
  }

  async hash(params: { path: string; signal?: AbortSignal }): Promise<{ sizeBytes: number; sha256: string } | null> {
    try {
      return await this.streamTo(params.path, null, params.signal);
    } catch (err) {
      if (err instanceof StoreError || err instanceof LinkedEntryError || (err as Error).name === 'AbortError')
        throw err;
      if (isMissing(err)) return null;
      throw new StoreError(`hash ${params.path} in ${this.root}: ${(err as Error).message}`, { cause: err });
    }
  }

  async download(params: {
    path: string;
    dest: string;
    signal?: AbortSignal;
  }): Promise<{ sizeBytes: number; sha256: string }> {
    return wrap(`download ${params.path}`, async () => {
      await mkdir(dirname(params.dest), { recursive: true });
      const got = await this.streamTo(params.path, createWriteStream(params.dest), params.signal);
      if (got === null) {
        throw new StoreError(`directory store: download ${params.path} failed: no such file in ${this.root}`, {
          cause: Object.assign(new Error(`ENOENT: ${params.path}`), { code: 'ENOENT' }),
        });
      }
      await fsyncPath(params.dest);
      return got;
    });
  }

  /** Makes the parent folders of a repo path, refusing a linked component. */
  private async mkdirs(path: string): Promise<string> {
    const segs = path.split('/');
    let abs = this.root;
    for (const seg of segs.slice(0, -1)) {
      abs = join(abs, seg);
      try {
        await mkdir(abs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const st = await lstat(abs);
      if (st.isSymbolicLink()) throw new LinkedEntryError(abs);
      if (!st.isDirectory()) throw new StoreError(`directory store: ${abs} is not a folder; cannot put ${path}`);
    }
    return join(abs, segs[segs.length - 1] as string);
  }

  /** Copies a push's files into staging while their manifest hashes them; its commit renames those copies in. */
  openStaging(): LocalStaging {
    return new DirStaging(this.root, join(this.root, STAGING), () => this.create());
  }

  async commit(params: StoreCommitParams): Promise<void> {
    for (const op of params.operations) assertSafeName(op.path);
    const signal = params.signal;
    signal?.throwIfAborted();
    if (!(await this.exists()))
      throw new StoreError(`directory store ${this.root} does not exist: create() it first (the first push does).`);
    const stagingRoot = join(this.root, STAGING);
    const staging = join(stagingRoot, `${process.pid}-${randomBytes(6).toString('hex')}`);
    const pre = params.staged instanceof DirStaging && params.staged.root === this.root ? params.staged : null;
    let releaseLock: (() => Promise<void>) | undefined;
    // Every target is checked before anything is staged: a linked component refuses the whole commit.
    for (const op of params.operations) await this.resolvePath(op.path);
    try {
      await mkdir(stagingRoot, { recursive: true });
      if ((await lstat(stagingRoot)).isSymbolicLink()) throw new LinkedEntryError(stagingRoot);
      await mkdir(staging);
      await this.removeDeadStaging(stagingRoot);
      const puts = params.operations.filter((op) => op.kind === 'put');
      const staged = puts.map((op, i) => ({
        path: op.path,
        tmp: join(staging, String(i)),
        hash: null as StoredHash | null,
      }));
      let tookStaged = false;
      // A few files at once: one file's copy and fsync run in the kernel while another's copy is hashed here.
      for (let at = 0; at < puts.length; at += STAGE_AT_ONCE) {
        signal?.throwIfAborted();
        const batch = puts.slice(at, at + STAGE_AT_ONCE).map(async (op, k) => {
          const s = staged[at + k] as (typeof staged)[number];
          await wrap(`stage ${op.path}`, async () => {
            const took = 'localPath' in op ? await pre?.take(op.localPath) : undefined;
            if (took !== undefined) {
              Object.assign(s, took);
              tookStaged = true;
            } else if ('localPath' in op) s.hash = await stageCopy(op.localPath, s.tmp);
            else {
              await writeFile(s.tmp, op.bytes, { flag: 'wx' });
              await fsyncPath(s.tmp);
            }
          });
        });
        const failed = (await Promise.allSettled(batch)).find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
      }
      await Promise.all([fsyncPath(staging), pre !== null && tookStaged ? fsyncPath(pre.folder) : undefined]);
      await pre?.assertSourcesUnchanged();
      signal?.throwIfAborted();
      // The check and the renames happen under one exclusive lock: two processes cannot both pass the
      // compare-and-swap on the same content, so a second writer is refused instead of interleaved.
      releaseLock = await lockCommit(this.root);
      for (const cond of [params.ifMatch ?? []].flat()) await this.checkIfMatch(cond);
      await params.onProgress?.({ stage: 'commit' });
      // Past the commit point the renames run to the end, abort or not: a commit is all-or-nothing as far as a
      // directory allows. Each folder is fsynced once, after its last rename, before the commit returns.
      const folders = new Set<string>();
      for (const { path, tmp, hash } of staged) {
        await wrap(`put ${path}`, async () => {
          const target = await this.mkdirs(path);
          const st = await lstat(target).catch((err: unknown) => (isMissing(err) ? null : Promise.reject(err)));
          if (st?.isSymbolicLink()) throw new LinkedEntryError(target);
          this.stored.forget(target);
          await rename(tmp, target);
          folders.add(dirname(target));
          if (hash !== null) await this.stored.remember(target, hash);
        });
        await params.onProgress?.({ stage: 'file', kind: 'put', path });
      }
      for (const folder of folders) await wrap(`fsync ${folder}`, () => fsyncPath(folder));
      for (const op of params.operations) {
        if (op.kind !== 'delete') continue;
        const { abs, stats } = await this.resolvePath(op.path);
        if (stats === null) {
          throw new StoreError(`directory store: delete ${op.path} failed: no such file in ${this.root}`, {
            cause: Object.assign(new Error(`ENOENT: ${op.path}`), { code: 'ENOENT' }),
          });
        }
        await wrap(`delete ${op.path}`, async () => {
          this.stored.forget(abs);
          await unlink(abs);
          await this.removeEmptyParents(dirname(abs));
        });
        await params.onProgress?.({ stage: 'file', kind: 'delete', path: op.path });
      }
    } catch (err) {
      if (isDiskFull(err)) {
        let need = 0;
        for (const op of params.operations) {
          if (op.kind !== 'put') continue;
          need += 'localPath' in op ? (await lstat(op.localPath).catch(() => ({ size: 0 }))).size : op.bytes.length;
        }
        throw new DiskFullError({
          path: this.root,
          bytesNeeded: need,
          what: `writing ${params.operations.filter((o) => o.kind === 'put').length} files into the directory store`,
          cause: err,
        });
      }
      throw err;
    } finally {
      await releaseLock?.();
      await rm(staging, { recursive: true, force: true });
    }
  }

  private async checkIfMatch(cond: { path: string; sha256: string | null }): Promise<void> {
    const now = await this.readFile({ path: cond.path });
    const sha = now === null ? null : sha256Hex(now);
    if (sha === cond.sha256) return;
    throw new ConcurrentWriteError({ path: cond.path, writer: describeWriter(now), where: this.description });
  }

  private async removeEmptyParents(dir: string): Promise<void> {
    let current = dir;
    while (current.startsWith(this.root) && current !== this.root) {
      try {
        await rmdir(current);
      } catch {
        break; // not empty (or already gone): stop climbing
      }
      current = dirname(current);
    }
    await fsyncPath(current.startsWith(this.root) ? current : this.root);
  }

  /** Staging folders left by a writer that was killed. */
  private async removeDeadStaging(stagingRoot: string): Promise<void> {
    for (const name of await readdir(stagingRoot)) {
      const pid = Number(name.split('-')[0]);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      if (!pidAlive(pid)) await rm(join(stagingRoot, name), { recursive: true, force: true });
    }
  }
}

async function wrap<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (
      err instanceof StoreError ||
      err instanceof LinkedEntryError ||
      err instanceof ConcurrentWriteError ||
      (err as Error).name === 'AbortError'
    )
      throw err;
    throw new StoreError(`directory store: ${what} failed: ${(err as Error).message}`, { cause: err });
  }
}
