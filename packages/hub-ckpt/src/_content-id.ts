import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { StoreOperation } from './types';

/** How a put's content is recognised in a store listing: sha256 (LFS oid) and git blob sha1 (regular file oid). */
export interface ContentId {
  sizeBytes: number;
  sha256: string;
  gitSha1: string;
}

/** Both ids of a put's content, in one pass over the bytes. */
export async function contentId(op: Extract<StoreOperation, { kind: 'put' }>): Promise<ContentId> {
  if ('bytes' in op) {
    const sha1 = createHash('sha1').update(`blob ${op.bytes.length}\0`).update(op.bytes);
    return {
      sizeBytes: op.bytes.length,
      sha256: createHash('sha256').update(op.bytes).digest('hex'),
      gitSha1: sha1.digest('hex'),
    };
  }
  const sizeBytes = (await stat(op.localPath)).size;
  const sha256 = createHash('sha256');
  const sha1 = createHash('sha1').update(`blob ${sizeBytes}\0`);
  let seen = 0;
  for await (const chunk of createReadStream(op.localPath, { highWaterMark: 1024 * 1024 })) {
    sha256.update(chunk as Buffer);
    sha1.update(chunk as Buffer);
    seen += (chunk as Buffer).length;
  }
  if (seen !== sizeBytes) throw new Error(`${op.localPath} changed size while being hashed`);
  return { sizeBytes, sha256: sha256.digest('hex'), gitSha1: sha1.digest('hex') };
}

/** A remote entry as the reconcile step sees it. */
export interface RemoteEntry {
  sizeBytes: number;
  /** git blob id of the file (regular) or of its LFS pointer. */
  gitOid?: string;
  /** LFS sha256 oid. */
  lfsOid?: string;
}

/** Whether `remote` already holds exactly `want`. */
export function holds(remote: RemoteEntry | undefined, want: ContentId): boolean {
  if (remote === undefined || remote.sizeBytes !== want.sizeBytes) return false;
  if (remote.lfsOid !== undefined) return remote.lfsOid === want.sha256;
  return remote.gitOid === want.gitSha1;
}
