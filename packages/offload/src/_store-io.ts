// File I/O and error wording of the store's named scratch files, and small helpers it shares.
import { closeSync, fstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { open as openAsync, type FileHandle } from 'node:fs/promises';
import { SizeMismatch } from './_anon-files';
import { fromBuffer } from './_dtype';
import type { ActivationHandle } from './activation-store-options';
import { ScratchFileCorruptError, ScratchFileMissingError, StoreClosedError } from './errors';
import type { OffloadTensor } from './types';

export function tensorOf(handle: ActivationHandle, buffer: ArrayBuffer): OffloadTensor {
  return { dtype: handle.dtype, dims: [...handle.dims], data: fromBuffer(handle.dtype, buffer) } as OffloadTensor;
}

export function copyOf(bytes: Uint8Array): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(buffer).set(bytes);
  return buffer;
}

export function writeAllSync(fd: number, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const n = writeSync(fd, bytes, offset, bytes.byteLength - offset);
    if (n <= 0) throw new Error(`write returned ${n}`);
    offset += n;
  }
}

export async function writeAllAsync(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const { bytesWritten } = await fh.write(bytes, offset, bytes.byteLength - offset);
    if (bytesWritten <= 0) throw new Error(`write returned ${bytesWritten}`);
    offset += bytesWritten;
  }
}

export function describeHandle(handle: ActivationHandle): string {
  return `activation #${handle.id} (${handle.dtype} [${handle.dims.join(', ')}], ${handle.byteLength} bytes)`;
}

export function missing(handle: ActivationHandle, path: string, cause: unknown): ScratchFileMissingError {
  return new ScratchFileMissingError(
    `unpack: the scratch file of ${describeHandle(handle)} is missing: ${path}. ` +
      'Something outside this store deleted it (another process, a manual cleanup, or a sweep that judged its ' +
      'owner dead); ' +
      'the activation is lost, so rerun the step.',
    { path, cause },
  );
}

export function readExactSync(handle: ActivationHandle, path: string): ArrayBuffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if (errCode(err) === 'ENOENT') throw missing(handle, path, err);
    throw new ScratchFileCorruptError(
      `unpack: cannot open the scratch file of ${describeHandle(handle)}: ${path} (${errCode(err)})`,
      { path, cause: err },
    );
  }
  try {
    const size = fstatSync(fd).size;
    if (size !== handle.byteLength) throw sizeMismatch(handle, path, size);
    const buffer = new ArrayBuffer(handle.byteLength);
    const view = new Uint8Array(buffer);
    let offset = 0;
    while (offset < view.byteLength) {
      const n = readSync(fd, view, offset, view.byteLength - offset, offset);
      if (n <= 0) throw sizeMismatch(handle, path, offset);
      offset += n;
    }
    return buffer;
  } finally {
    safeClose(fd);
  }
}

export async function readExactAsync(handle: ActivationHandle, path: string): Promise<ArrayBuffer> {
  let fh: FileHandle;
  try {
    fh = await openAsync(path, 'r');
  } catch (err) {
    if (errCode(err) === 'ENOENT') throw missing(handle, path, err);
    throw new ScratchFileCorruptError(
      `unpack: cannot open the scratch file of ${describeHandle(handle)}: ${path} (${errCode(err)})`,
      { path, cause: err },
    );
  }
  try {
    const { size } = await fh.stat();
    if (size !== handle.byteLength) throw sizeMismatch(handle, path, size);
    const buffer = new ArrayBuffer(handle.byteLength);
    const view = new Uint8Array(buffer);
    let offset = 0;
    while (offset < view.byteLength) {
      const { bytesRead } = await fh.read(view, offset, view.byteLength - offset, offset);
      if (bytesRead <= 0) throw sizeMismatch(handle, path, offset);
      offset += bytesRead;
    }
    return buffer;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

export function anonFailure(handle: ActivationHandle, saveDir: string, err: unknown): Error {
  const where = `the anonymous scratch file (O_TMPFILE in ${saveDir})`;
  if (err instanceof SizeMismatch) {
    return new ScratchFileCorruptError(
      `unpack: ${where} of ${describeHandle(handle)} holds ${err.size} bytes, expected ${handle.byteLength}`,
      { path: saveDir },
    );
  }
  return new ScratchFileCorruptError(
    `unpack: cannot read ${where} of ${describeHandle(handle)} (${errCode(err) ?? String(err)})`,
    { path: saveDir, cause: err },
  );
}

export function sizeMismatch(handle: ActivationHandle, path: string, size: number): ScratchFileCorruptError {
  return new ScratchFileCorruptError(
    `unpack: the scratch file of ${describeHandle(handle)} holds ${size} bytes, expected ${handle.byteLength}: ` +
      `${path} (changed outside this store)`,
    { path },
  );
}

export function closedError(op: string): StoreClosedError {
  return new StoreClosedError(
    `${op}: the ActivationStore is closed (its scratch files were deleted); open a new store`,
  );
}

export function safeClose(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed or EIO: nothing more to do
  }
}

export function safeUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already: fine
  }
}

export function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
