// Hashes of files this process already read, keyed by what changes whenever the bytes can have changed: device,
// inode, size, mtime and ctime in nanoseconds. ctime moves on every write and cannot be set back by a user, so a
// file rewritten in place with its old size and mtime restored is hashed again. A push of final/ after the push of
// the checkpoint holding the same files (or a retried push) then reads no byte twice.
import { stat } from 'node:fs/promises';
import { hashFile, identityOf } from './_fs';

export interface FileHash {
  sha256: string;
  sizeBytes: number;
  /** git blob id, present when asked for with the file's size and the file had that size. */
  gitSha1?: string;
}

interface Entry extends FileHash {
  identity: string;
}

const MAX_ENTRIES = 100_000;
const memo = new Map<string, Entry>();
let hits = 0;

async function identityOfPath(path: string): Promise<string> {
  return identityOf(await stat(path, { bigint: true }));
}

/** The memo's hash of `path` while its identity is unchanged since it was hashed; else null. */
export async function memoHash(path: string, gitBlobSizeBytes?: number): Promise<FileHash | null> {
  const known = memo.get(path);
  if (known === undefined || (gitBlobSizeBytes !== undefined && !known.gitSha1)) return null;
  if (known.identity !== (await identityOfPath(path))) return null;
  hits++;
  const { identity: _, ...hash } = known;
  return hash;
}

/** Remembers the hash of bytes read from `path` while it had `identity` (before the first read and after the last). */
export function rememberHash(path: string, identity: string, hash: FileHash): void {
  if (memo.size >= MAX_ENTRIES) memo.delete(memo.keys().next().value as string);
  memo.set(path, { ...hash, identity });
}

/** `hashFile`, served from this process's memo when the file's identity is unchanged since it was hashed. */
export async function hashFileMemo(path: string, gitBlobSizeBytes?: number): Promise<FileHash> {
  const known = await memoHash(path, gitBlobSizeBytes);
  if (known !== null) return known;
  const identity = await identityOfPath(path);
  const hash = await hashFile(path, gitBlobSizeBytes);
  // A file that changed while it was read is not remembered: its identity after the read decides.
  if ((await identityOfPath(path)) === identity) rememberHash(path, identity, hash);
  return hash;
}

/** How many hashes were served from the memo in this process (for tests and the bench). */
export function hashMemoHits(): number {
  return hits;
}
