// One pass over a source file for the directory store: each chunk is read once, hashed (the manifest's sha256) and
// written from that same buffer to the new file; once written, the chunk is read back from the new file through a
// second descriptor and compared byte for byte with the buffer that was hashed. Equal bytes have equal hashes, so the
// store's copy is shown to hash to the manifest's sha256 as surely as by hashing the read-back (more: no collision to
// trust), at a memcmp's cost instead of a second sha256 pass. A source written to while it is read (a trainer still
// writing) is caught by its identity (device, inode, size, mtime and ctime in nanoseconds, taken on the open file
// before the first read and after the last), the test the hash memo relies on.
import { createHash } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import { identityOf } from './_fs';
import { StoreError } from './errors';

const CHUNK = 1024 * 1024;
/** Chunks in flight: one being read, one hashed, the others being written or read back. */
const RING = 4;
/** A datasync every so many bytes starts the write-back while the copy goes on, so the last fsync waits on less. */
const SYNC_EVERY = 8 * 1024 * 1024;

type Handle = Awaited<ReturnType<typeof open>>;

// Buffers kept between copies (a push's files, the next push soon after) and dropped once idle: a fresh buffer costs
// a page fault per 4 KiB on first touch: a push of 64 MiB took 16,800 of them without this (2 MiB chunks then).
const IDLE_MS = 5_000;
let spare: Buffer[] = [];
let dropSpare: NodeJS.Timeout | undefined;

function takeBuffers(n: number, size: number): Buffer[] {
  clearTimeout(dropSpare);
  return Array.from({ length: n }, () => spare.pop()?.subarray(0, size) ?? Buffer.allocUnsafe(size));
}

function giveBack(bufs: Buffer[]): void {
  for (const b of bufs) {
    if (spare.length < 4 * RING && b.buffer.byteLength === CHUNK && b.byteOffset === 0)
      spare.push(Buffer.from(b.buffer));
  }
  clearTimeout(dropSpare);
  dropSpare = setTimeout(() => {
    spare = [];
  }, IDLE_MS);
  dropSpare.unref();
}

export interface HashedCopy {
  /** Of the bytes read from the source, which are the bytes written. */
  sha256: string;
  sizeBytes: number;
  /** git blob id when asked for with `gitBlobSizeBytes` and the file had that size. */
  gitSha1?: string;
  /** Settles once the copy is fsynced and every chunk read back equal to what was hashed; rejects otherwise. */
  landed: Promise<void>;
  /** The source's identity before the first read and after the last: unequal when it was written to meanwhile. */
  identityBefore: string;
  identityAfter: string;
}

/** Copies `src` to the new file `dest`, hashing the bytes on the way; `landed` says when it is fsynced and checked. */
export async function copyHashing(src: string, dest: string, gitBlobSizeBytes?: number): Promise<HashedCopy> {
  const fin = await open(src, 'r');
  let out: Handle | undefined;
  let back: Handle | undefined;
  let buffers: Buffer[] = [];
  // Reads, writes, read-backs and syncs in flight: each is awaited in turn, and all settle before a file is closed.
  const inflight: Promise<unknown>[] = [];
  const track = <T>(p: Promise<T>): Promise<T> => {
    p.catch(() => undefined);
    inflight.push(p);
    return p;
  };
  try {
    const before = await fin.stat({ bigint: true });
    const identityBefore = identityOf(before);
    // No larger buffers than the file needs (a small file is common), at least 64 KiB in case it grows.
    const chunk = Math.min(CHUNK, Math.max(Number(before.size), 64 * 1024));
    out = await open(dest, 'wx');
    back = await open(dest, 'r');
    const [o, b] = [out, back];
    const hash = createHash('sha256');
    const sha1 = gitBlobSizeBytes === undefined ? undefined : createHash('sha1').update(`blob ${gitBlobSizeBytes}\0`);
    const bufs = takeBuffers(RING, chunk);
    const backs = takeBuffers(RING, chunk);
    buffers = [...bufs, ...backs];
    /** Per slot: its last chunk written and read back equal, so its buffers are free again. */
    const checked: Promise<void>[] = Array.from({ length: RING }, () => Promise.resolve());
    let at = 0;
    let reading = track(fin.read(bufs[0] as Buffer, 0, chunk, 0));
    let writing: Promise<void> = Promise.resolve();
    let syncing: Promise<void> = Promise.resolve();
    let syncedAt = 0;
    let syncBusy = false;
    for (let i = 0; ; i++) {
      const { bytesRead } = await reading;
      if (bytesRead === 0) break;
      const k = i % RING;
      const next = (i + 1) % RING;
      const from = at;
      at += bytesRead;
      await checked[next];
      reading = track(fin.read(bufs[next] as Buffer, 0, chunk, at));
      const bytes = (bufs[k] as Buffer).subarray(0, bytesRead);
      hash.update(bytes);
      sha1?.update(bytes);
      const written = writing.then(() => writeAll(o, bytes, from));
      writing = track(written);
      checked[k] = track(written.then(() => readBackEqual(b, backs[k] as Buffer, bytes, from, dest)));
      // Never waits on the disk: while one datasync runs, the copy goes on and the next starts after it.
      if (at - syncedAt >= SYNC_EVERY && !syncBusy) {
        syncedAt = at;
        syncBusy = true;
        syncing = track(written.then(() => o.datasync()).finally(() => (syncBusy = false)));
      }
    }
    await writing;
    const identityAfter = identityOf(await fin.stat({ bigint: true }));
    const size = at;
    const held = buffers;
    buffers = [];
    // The last read-backs and the fsync finish while the caller goes on (the next file's copy); the commit awaits them.
    const landed = (async () => {
      try {
        await Promise.all([...checked, syncing]);
        await o.sync();
        const now = (await b.stat()).size;
        if (now !== size) throw new StoreError(`directory store: ${dest} holds ${now} bytes, ${size} were written`);
      } finally {
        await Promise.allSettled([...checked, o.close(), b.close()]);
        giveBack(held);
      }
    })();
    landed.catch(() => undefined);
    out = undefined;
    back = undefined;
    const gitSha1 = sha1 !== undefined && at === gitBlobSizeBytes ? sha1.digest('hex') : undefined;
    return {
      sha256: hash.digest('hex'),
      sizeBytes: at,
      ...(gitSha1 === undefined ? {} : { gitSha1 }),
      landed,
      identityBefore,
      identityAfter,
    };
  } catch (err) {
    await Promise.allSettled(inflight);
    giveBack(buffers);
    if (out !== undefined) await unlink(dest).catch(() => undefined);
    throw err;
  } finally {
    await Promise.allSettled([out?.close(), back?.close(), fin.close()]);
  }
}

async function writeAll(fh: Handle, bytes: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}

/** Reads `want.length` bytes at `position` back from the copy and throws unless they equal `want`. */
async function readBackEqual(fh: Handle, into: Buffer, want: Buffer, position: number, dest: string): Promise<void> {
  let got = 0;
  while (got < want.length) {
    const { bytesRead } = await fh.read(into, got, want.length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  if (got !== want.length || !into.subarray(0, got).equals(want)) {
    throw new StoreError(
      `directory store: ${dest} reads back other bytes than were written at ${position} (${got} of ${want.length})`,
    );
  }
}
