// A directory store's staging of a push's local files while their manifest is built: each file is copied into the
// store's staging folder by the kernel while a worker thread reads the copy behind it and hashes it for the manifest
// (copyHashing), and the data commit renames those copies into place instead of copying the files again. The
// manifest's sha256 is thus of the bytes the store's file holds, read from it; the verify then reads that hash
// (StoredHashes) while the file is untouched. A source written to from before its copy to the commit point fails the
// push before anything lands (its identity moved).
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidCheckpointOptionError, LinkedEntryError } from './errors';
import type { StoredHash } from './_dir-stage';
import { identityOf, isDirectory } from './_fs';
import { copyHashing, type HashedCopy, warmCopyWorkers } from './_hash-copy';
import { type FileHash, hashFileMemo, memoHash, rememberHash } from './_hash-memo';
import type { LocalStaging } from './types';

interface Staged {
  tmp: string;
  /** The manifest's hash of the bytes written. */
  hash: StoredHash;
  /** Settles once the copy is fsynced; rejects otherwise. */
  landed: Promise<void>;
}

export class DirStaging implements LocalStaging {
  /** This push's folder under the store's staging root, named `<pid>-<random>` as a commit's is. */
  readonly folder: string;
  readonly #byPath = new Map<string, Staged>();
  readonly #pending: Promise<unknown>[] = [];
  /** Each staged source's identity when it was read. */
  readonly #readAs = new Map<string, string>();
  #made: Promise<void> | null = null;
  #count = 0;
  #broken = false;

  constructor(
    readonly root: string,
    private readonly stagingRoot: string,
    private readonly createRoot: () => Promise<void>,
  ) {
    this.folder = join(stagingRoot, `${process.pid}-${randomBytes(6).toString('hex')}`);
    warmCopyWorkers();
  }

  async hash(localPath: string, gitBlobSizeBytes?: number): Promise<FileHash> {
    // Bytes this process hashed already and that have not changed since: the commit copies them by the kernel and
    // re-reads that copy, as for any put.
    const known = await memoHash(localPath, gitBlobSizeBytes);
    if (known !== null) return known;
    if (this.#broken) return hashFileMemo(localPath, gitBlobSizeBytes);
    const tmp = join(this.folder, String(this.#count++));
    let got: HashedCopy;
    try {
      this.#made ??= this.#makeFolder();
      await this.#made;
      got = await copyHashing(localPath, tmp, gitBlobSizeBytes);
    } catch {
      // A store that cannot take a copy now (a full disk, a linked staging folder): the files are hashed alone and
      // the commit copies them, failing there with the error it names (DiskFullError with the bytes needed).
      this.#broken = true;
      return hashFileMemo(localPath, gitBlobSizeBytes);
    }
    this.#pending.push(got.landed);
    if (got.identityAfter !== got.identityBefore) {
      await got.landed.catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw changedWhileRead(localPath);
    }
    const hash: FileHash = {
      sha256: got.sha256,
      sizeBytes: got.sizeBytes,
      ...(got.gitSha1 === undefined ? {} : { gitSha1: got.gitSha1 }),
    };
    rememberHash(localPath, got.identityBefore, hash);
    if (!this.#byPath.has(localPath)) this.#byPath.set(localPath, { tmp, hash, landed: got.landed });
    this.#readAs.set(localPath, got.identityBefore);
    return hash;
  }

  /**
   * The staged copy of `localPath` for a commit to rename into place, once fsynced; undefined when none was staged
   * (or a put of the same file took it already).
   */
  async take(localPath: string): Promise<{ tmp: string; hash: StoredHash } | undefined> {
    const s = this.#byPath.get(localPath);
    if (s === undefined) return undefined;
    this.#byPath.delete(localPath);
    await s.landed;
    return { tmp: s.tmp, hash: s.hash };
  }

  /**
   * Throws InvalidCheckpointOptionError when a staged source was written to (or replaced) since it was read: the
   * commit asks before its commit point, so a trainer still writing fails the push before anything lands.
   */
  async assertSourcesUnchanged(): Promise<void> {
    for (const [localPath, identity] of this.#readAs) {
      const now = await stat(localPath, { bigint: true }).then(identityOf, () => 'gone');
      if (now !== identity) throw changedWhileRead(localPath);
    }
  }

  /** Removes what no commit took (every copy, after a failed push). */
  async close(): Promise<void> {
    this.#byPath.clear();
    await Promise.allSettled(this.#pending);
    if (this.#made !== null) await rm(this.folder, { recursive: true, force: true });
  }

  async #makeFolder(): Promise<void> {
    if (!(await isDirectory(this.root))) await this.createRoot();
    await mkdir(this.stagingRoot, { recursive: true });
    if ((await lstat(this.stagingRoot)).isSymbolicLink()) throw new LinkedEntryError(this.stagingRoot);
    await mkdir(this.folder);
  }
}

function changedWhileRead(localPath: string): InvalidCheckpointOptionError {
  return new InvalidCheckpointOptionError(
    `${localPath} was written to while being pushed: push a checkpoint only once the trainer finished writing it.`,
    { field: 'dir' },
  );
}
