import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import { StoreError } from './errors';
import { copyFileDurable, fsyncPath, hashFile, isDirectory, TMP_PREFIX } from './_fs';
import { assertSafeName } from './_paths';
import type { CheckpointStore, StoreCommitParams, StoreEntry } from './types';

export interface DirStoreOptions {
  /** The directory that plays the repo (local disk, NFS, a mounted bucket). Created on first push. */
  root: string;
}

const STAGING = `${TMP_PREFIX}staging`;

/**
 * A checkpoint store over a directory, with the same semantics as the Hub: every put is staged
 * and fsynced, then renamed into place (atomic per file), folders are fsynced after each rename,
 * deletes happen after puts. One writer per directory.
 */
export class DirStore implements CheckpointStore {
  readonly kind = 'dir' as const;
  /** Absolute root directory. */
  readonly root: string;
  readonly description: string;

  constructor(opts: DirStoreOptions) {
    if (typeof opts.root !== 'string' || opts.root === '') {
      throw new StoreError('DirStore: root must be a non-empty directory path');
    }
    this.root = resolve(opts.root);
    this.description = `dir ${this.root}`;
  }

  private abs(path: string): string {
    assertSafeName(path);
    return join(this.root, ...path.split('/'));
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
    const start = prefix === '' ? this.root : this.abs(prefix);
    const out: StoreEntry[] = [];
    const walk = async (abs: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(abs, { withFileTypes: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith(TMP_PREFIX)) continue;
        const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
        const childAbs = join(abs, e.name);
        if (e.isDirectory()) await walk(childAbs, childRel);
        else if (e.isFile()) out.push({ path: childRel, sizeBytes: (await stat(childAbs)).size });
      }
    };
    await wrap(`list ${prefix || '/'}`, () => walk(start, prefix));
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async stat(params: { paths: string[] }): Promise<StoreEntry[]> {
    const out: StoreEntry[] = [];
    for (const path of params.paths) {
      const abs = this.abs(path);
      try {
        const s = await stat(abs);
        if (s.isFile()) out.push({ path, sizeBytes: s.size });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new StoreError(`stat ${path} in ${this.root}: ${(err as Error).message}`, { cause: err });
      }
    }
    return out;
  }

  async readFile(params: { path: string }): Promise<Uint8Array | null> {
    const abs = this.abs(params.path);
    try {
      return new Uint8Array(await readFile(abs));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw new StoreError(`read ${params.path} in ${this.root}: ${(err as Error).message}`, { cause: err });
    }
  }

  async hash(params: { path: string }): Promise<{ sizeBytes: number; sha256: string } | null> {
    const src = this.abs(params.path);
    try {
      return await hashFile(src);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw new StoreError(`hash ${params.path} in ${this.root}: ${(err as Error).message}`, { cause: err });
    }
  }

  async download(params: { path: string; dest: string }): Promise<{ sizeBytes: number; sha256: string }> {
    const src = this.abs(params.path);
    return wrap(`download ${params.path}`, async () => {
      const hash = createHash('sha256');
      let sizeBytes = 0;
      await mkdir(dirname(params.dest), { recursive: true });
      await pipeline(
        createReadStream(src, { highWaterMark: 1024 * 1024 }),
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            hash.update(chunk);
            sizeBytes += chunk.length;
            cb(null, chunk);
          },
        }),
        createWriteStream(params.dest),
      );
      await fsyncPath(params.dest);
      return { sizeBytes, sha256: hash.digest('hex') };
    });
  }

  async commit(params: StoreCommitParams): Promise<void> {
    for (const op of params.operations) assertSafeName(op.path);
    if (!(await this.exists())) throw new StoreError(`directory store ${this.root} does not exist: create() it first (the first push does).`);
    const stagingRoot = join(this.root, STAGING);
    const staging = join(stagingRoot, `${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      await mkdir(staging, { recursive: true });
      await this.removeDeadStaging(stagingRoot);
      const staged: Array<{ path: string; tmp: string }> = [];
      let i = 0;
      for (const op of params.operations) {
        if (op.kind !== 'put') continue;
        const tmp = join(staging, String(i++));
        await wrap(`stage ${op.path}`, async () => {
          if ('localPath' in op) await copyFileDurable(op.localPath, tmp);
          else {
            await writeFile(tmp, op.bytes);
            await fsyncPath(tmp);
          }
        });
        staged.push({ path: op.path, tmp });
      }
      await fsyncPath(staging);
      await params.onProgress?.({ stage: 'commit' });
      for (const { path, tmp } of staged) {
        const target = this.abs(path);
        await wrap(`put ${path}`, async () => {
          await mkdir(dirname(target), { recursive: true });
          await rename(tmp, target);
          await fsyncPath(dirname(target));
        });
        await params.onProgress?.({ stage: 'file', kind: 'put', path });
      }
      for (const op of params.operations) {
        if (op.kind !== 'delete') continue;
        const target = this.abs(op.path);
        await wrap(`delete ${op.path}`, async () => {
          await unlink(target);
          await this.removeEmptyParents(dirname(target));
        });
        await params.onProgress?.({ stage: 'file', kind: 'delete', path: op.path });
      }
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
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
      let alive = true;
      try {
        process.kill(pid, 0);
      } catch (err) {
        alive = (err as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (!alive) await rm(join(stagingRoot, name), { recursive: true, force: true });
    }
  }
}

async function wrap<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof StoreError) throw err;
    throw new StoreError(`directory store: ${what} failed: ${(err as Error).message}`, { cause: err });
  }
}
