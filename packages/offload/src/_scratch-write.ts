// One attempt at writing a tensor's bytes to its own named scratch file: created exclusively
// (`wx`, mode 0600), fully written, flushed as `fsync` asks. On failure nothing is left behind,
// and `retry` says whether the name was taken (EEXIST), so the store can try the next name.
import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { open as openAsync, unlink as unlinkAsync, type FileHandle } from 'node:fs/promises';
import { errCode, safeClose, safeUnlink, writeAllAsync, writeAllSync } from './_store-io';

export type ScratchWrite = { ok: true } | { ok: false; error: unknown; retry: boolean };

/** Background flushes of `fsync: 'data'`: `start` when one is handed to the pool, `end` when done. */
export interface FlushCounter {
  start(): void;
  end(): void;
}

export function writeScratchSync(
  path: string,
  bytes: Uint8Array,
  fsync: boolean | 'data',
  flushes: FlushCounter,
): ScratchWrite {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    return { ok: false, error: err, retry: errCode(err) === 'EEXIST' };
  }
  try {
    writeAllSync(fd, bytes);
    if (fsync === true) fsyncSync(fd);
  } catch (err) {
    safeClose(fd);
    safeUnlink(path);
    return { ok: false, error: err, retry: false };
  }
  if (fsync === 'data') {
    // Written back by a libuv pool thread while the caller goes on (the next segment runs);
    // the fd closes when it is done. The bytes are already in the file (page cache): a read
    // before the flush ends sees them, and unlinking an open file is fine.
    flushes.start();
    fdatasync(fd, () => {
      flushes.end();
      safeClose(fd);
    });
  } else {
    try {
      closeSync(fd);
    } catch (err) {
      safeUnlink(path);
      return { ok: false, error: err, retry: false };
    }
  }
  return { ok: true };
}

export async function writeScratchAsync(
  path: string,
  bytes: Uint8Array,
  fsync: boolean | 'data',
): Promise<ScratchWrite> {
  let fh: FileHandle | undefined;
  try {
    fh = await openAsync(path, 'wx', 0o600);
  } catch (err) {
    return { ok: false, error: err, retry: errCode(err) === 'EEXIST' };
  }
  try {
    await writeAllAsync(fh, bytes);
    if (fsync === 'data') await fh.datasync();
    else if (fsync === true) await fh.sync();
    const h = fh;
    fh = undefined;
    await h.close();
  } catch (err) {
    await fh?.close().catch(() => undefined);
    await unlinkAsync(path).catch(() => undefined);
    return { ok: false, error: err, retry: false };
  }
  return { ok: true };
}
