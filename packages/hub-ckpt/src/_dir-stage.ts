// The directory store's copy path for a put whose staged copy the push did not already make: the same kernel copy,
// hashed behind it by a copy worker, as the staging's (copyHashing), then fsynced. The hash is remembered against the
// copy's identity (device, inode, size, mtime and ctime in nanoseconds, taken after the rename into place) so the
// verify that follows reads it instead of hashing the same bytes again; any write to the file moves its mtime and
// ctime, and then the verify reads and hashes the file in full.
import { lstat, type FileHandle } from 'node:fs/promises';
import { identityOf } from './_fs';
import { copyHashing } from './_hash-copy';

export interface StoredHash {
  sizeBytes: number;
  sha256: string;
}

/** Copies `src` to the new file `dest` by the kernel, hashing the copy behind it; resolves once it is fsynced. */
export async function stageCopy(src: string, dest: string): Promise<StoredHash> {
  const got = await copyHashing(src, dest);
  await got.landed;
  return { sizeBytes: got.sizeBytes, sha256: got.sha256 };
}

/** Hashes of files this store wrote and re-read, by absolute path, valid while the identity is unchanged. */
export class StoredHashes {
  readonly #byPath = new Map<string, StoredHash & { identity: string }>();

  /** Records the hash of the file now at `abs` (after its rename into place). */
  async remember(abs: string, hash: StoredHash): Promise<void> {
    const st = await lstat(abs, { bigint: true });
    if (st.isFile() && st.size === BigInt(hash.sizeBytes)) this.#byPath.set(abs, { ...hash, identity: identityOf(st) });
  }

  /** The remembered hash of the open file at `abs` while its identity is unchanged; else null (and forgotten). */
  async lookup(abs: string, fh: FileHandle): Promise<StoredHash | null> {
    const known = this.#byPath.get(abs);
    if (known === undefined) return null;
    if (identityOf(await fh.stat({ bigint: true })) !== known.identity) {
      this.#byPath.delete(abs);
      return null;
    }
    return { sizeBytes: known.sizeBytes, sha256: known.sha256 };
  }

  forget(abs: string): void {
    this.#byPath.delete(abs);
  }
}
