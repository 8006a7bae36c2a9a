import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { open as openAsync, unlink as unlinkAsync, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { AnonymousFiles } from './_anon-files';
import { tensorBytes } from './_dtype';
import { memoryBackedFs, memoryBackedWarning } from './_fs-type';
import { quote } from './_quote';
import { registerStore, unregisterStore } from './_registry';
import { resolveSaveDir } from './_save-dir';
import {
  tensorOf,
  copyOf,
  writeAllSync,
  writeAllAsync,
  readExactSync,
  readExactAsync,
  anonFailure,
  closedError,
  safeClose,
  safeUnlink,
  errCode,
} from './_store-io';
import { newToken, storePrefix, sweepDir } from './_scratch';
import { HandleError, OffloadConfigError } from './errors';
import type { ActivationHandle, ActivationStoreOptions } from './activation-store-options';
import type { ActivationStoreStats, OffloadTarget, OffloadTensor } from './types';

export type { ActivationHandle, ActivationStoreOptions } from './activation-store-options';

type Entry =
  | { kind: 'keep'; tensor: OffloadTensor }
  | { kind: 'copy'; buffer: ArrayBuffer }
  | { kind: 'disk'; path: string }
  | { kind: 'anon'; fd: number };

const TARGETS: ReadonlySet<string> = new Set(['keep', 'cpu', 'disk']);
const EEXIST_RETRIES = 8;

/**
 * Holds a step's saved activations between a forward and its backward: `pack(tensor)` → handle,
 * `unpack(handle)` → the byte-identical tensor, once. With `'disk'`, each tensor goes to its own
 * scratch file `soup-act-<pid>-<token>-<n>.bin`, created exclusively (`wx`, mode 0600) and fully
 * written before `pack` returns, deleted by `unpack`; `close()` deletes what is left, and a store
 * opening on a save dir first sweeps files whose owner process is dead. A failed write keeps the
 * tensor in memory instead (counted in `stats.writeFallbacks`), as the Python original does.
 */
export class ActivationStore {
  /** The store's target. */
  readonly target: OffloadTarget;
  /** Real path of the scratch directory (`'disk'` only), else `null`. */
  readonly saveDir: string | null;
  /** Random token of this store, part of its file names. */
  readonly token: string;
  /** Every scratch file of this store starts with this name. */
  readonly filePrefix: string;

  readonly #fsync: boolean | 'data';
  /** RAM-backed file system of the save dir (`tmpfs`, `ramfs`), else null. */
  readonly saveDirMemoryFs: string | null;
  readonly #onWriteError: ((error: Error, byteLength: number) => void) | undefined;
  readonly #entries = new Map<ActivationHandle, Entry>();
  readonly #consumed = new WeakSet<ActivationHandle>();
  /** Completed scratch files → bytes. */
  readonly #files = new Map<string, number>();
  /** Anonymous files (`anonymousFiles`), null when off. */
  readonly #anon: AnonymousFiles | null;
  /** Their descriptors → bytes. */
  readonly #anonBytes = new Map<number, number>();
  /** Paths an async pack is creating right now. */
  readonly #pending = new Set<string>();
  #seq = 0;
  #closed = false;
  /** Background fdatasyncs not finished yet (`pack` with `fsync: 'data'`). */
  #syncing = 0;
  readonly #stats: ActivationStoreStats;

  constructor(options: ActivationStoreOptions) {
    const target = options?.target as unknown;
    if (typeof target !== 'string' || !TARGETS.has(target)) {
      throw new OffloadConfigError(
        `Unknown activation_offloading target: ${quote(target)}. Expected 'keep', 'cpu', or 'disk'.`,
      );
    }
    this.target = target as OffloadTarget;
    this.#fsync = options.fsync ?? 'data';
    this.#onWriteError = options.onWriteError;
    this.token = newToken();
    this.filePrefix = storePrefix(this.token);
    this.#stats = {
      target: this.target,
      tensorsPacked: 0,
      tensorsUnpacked: 0,
      bytesPacked: 0,
      residentBytes: 0,
      peakResidentBytes: 0,
      diskBytes: 0,
      peakDiskBytes: 0,
      filesWritten: 0,
      filesDeleted: 0,
      writeFallbacks: 0,
      sweptFiles: 0,
    };

    if (this.target === 'disk') {
      const saveDir = options.saveDir;
      if (typeof saveDir !== 'string' || saveDir === '') {
        throw new OffloadConfigError(
          "activation_offloading='disk' requires save_dir (saveDir: a scratch directory under the working directory).",
        );
      }
      this.saveDir = openSaveDir(saveDir, options.cwd ?? process.cwd());
      if (options.sweep ?? true) this.#stats.sweptFiles = sweepDir(this.saveDir).length;
      this.saveDirMemoryFs = memoryBackedFs(this.saveDir);
      this.#anon = options.anonymousFiles ? new AnonymousFiles(this.saveDir) : null;
      if (this.saveDirMemoryFs) {
        const message = memoryBackedWarning(saveDir, this.saveDirMemoryFs);
        if (options.onWarning) options.onWarning(message);
        else process.emitWarning(message, { code: 'SOUP_OFFLOAD_SAVE_DIR_IN_RAM' });
      }
    } else {
      this.saveDir = null;
      this.saveDirMemoryFs = null;
      this.#anon = null;
    }
    registerStore(this);
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** A snapshot of the store's counters. */
  get stats(): ActivationStoreStats {
    return { ...this.#stats };
  }

  /** Background flushes (`fsync: 'data'`) still running. */
  get pendingFlushes(): number {
    return this.#syncing;
  }

  /** Whether `pack` writes anonymous files (`anonymousFiles` asked and the file system allows it). */
  get usesAnonymousFiles(): boolean {
    return this.#anon?.supported ?? false;
  }

  /** Handles packed and not yet unpacked. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Stores a tensor; returns its handle. `'disk'`: the data is in its scratch file when this returns.
   * @throws {TensorFormatError} when the tensor's dtype, data class and dims disagree.
   * @throws {StoreClosedError} after `close()`.
   */
  pack(tensor: OffloadTensor): ActivationHandle {
    this.#assertOpen('pack');
    const bytes = tensorBytes(tensor);
    if (this.target !== 'disk') return this.#packMemory(tensor, bytes);
    if (this.#anon) {
      let fd: number | null;
      try {
        fd = this.#anon.create();
      } catch (err) {
        return this.#fallback(tensor, bytes, err);
      }
      if (fd !== null) {
        try {
          this.#anon.writeSync(fd, bytes, this.#fsync);
        } catch (err) {
          this.#anon.release(fd);
          return this.#fallback(tensor, bytes, err);
        }
        return this.#addAnon(tensor, fd, bytes.byteLength);
      }
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < EEXIST_RETRIES; attempt += 1) {
      const path = this.#nextPath();
      let fd: number;
      try {
        fd = openSync(path, 'wx', 0o600);
      } catch (err) {
        lastError = err;
        if (errCode(err) === 'EEXIST') continue;
        break;
      }
      try {
        writeAllSync(fd, bytes);
        if (this.#fsync === true) fsyncSync(fd);
      } catch (err) {
        lastError = err;
        safeClose(fd);
        safeUnlink(path);
        break;
      }
      if (this.#fsync === 'data') {
        // Written back by a libuv pool thread while the caller goes on (the next segment runs);
        // the fd closes when it is done. The bytes are already in the file (page cache): a read
        // before the flush ends sees them, and unlinking an open file is fine.
        this.#syncing += 1;
        fdatasync(fd, () => {
          this.#syncing -= 1;
          safeClose(fd);
        });
      } else {
        try {
          closeSync(fd);
        } catch (err) {
          lastError = err;
          safeUnlink(path);
          break;
        }
      }
      return this.#addDisk(tensor, path, bytes.byteLength);
    }
    return this.#fallback(tensor, bytes, lastError);
  }

  /** {@link pack} with non-blocking file I/O. The tensor's data must not change until the promise settles. */
  async packAsync(tensor: OffloadTensor): Promise<ActivationHandle> {
    this.#assertOpen('pack');
    const bytes = tensorBytes(tensor);
    if (this.target !== 'disk') return this.#packMemory(tensor, bytes);
    if (this.#anon) {
      let fd: number | null;
      try {
        fd = this.#anon.create();
      } catch (err) {
        return this.#fallback(tensor, bytes, err);
      }
      if (fd !== null) {
        try {
          await this.#anon.writeAsync(fd, bytes, this.#fsync);
        } catch (err) {
          this.#anon.release(fd);
          if (this.#closed) throw closedError('pack');
          return this.#fallback(tensor, bytes, err);
        }
        if (this.#closed) {
          this.#anon.release(fd);
          throw closedError('pack');
        }
        return this.#addAnon(tensor, fd, bytes.byteLength);
      }
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < EEXIST_RETRIES; attempt += 1) {
      const path = this.#nextPath();
      this.#pending.add(path);
      let fh: FileHandle | undefined;
      try {
        fh = await openAsync(path, 'wx', 0o600);
      } catch (err) {
        this.#pending.delete(path);
        lastError = err;
        if (errCode(err) === 'EEXIST') continue;
        break;
      }
      try {
        await writeAllAsync(fh, bytes);
        if (this.#fsync === 'data') await fh.datasync();
        else if (this.#fsync === true) await fh.sync();
        const h = fh;
        fh = undefined;
        await h.close();
      } catch (err) {
        lastError = err;
        await fh?.close().catch(() => undefined);
        await unlinkAsync(path).catch(() => undefined);
        this.#pending.delete(path);
        break;
      }
      this.#pending.delete(path);
      if (this.#closed) {
        await unlinkAsync(path).catch(() => undefined);
        throw closedError('pack');
      }
      return this.#addDisk(tensor, path, bytes.byteLength);
    }
    if (this.#closed) throw closedError('pack');
    return this.#fallback(tensor, bytes, lastError);
  }

  /**
   * Returns the tensor of a handle and forgets it (`'disk'`: reads, then deletes the scratch file,
   * also when the read fails). `'keep'` returns the very object that was packed; the others a new
   * tensor whose bytes equal the packed ones (`float16` as a `Uint16Array`).
   * @throws {ScratchFileMissingError} when the scratch file was deleted behind the store's back.
   * @throws {HandleError} for a handle already unpacked or from another store.
   */
  unpack(handle: ActivationHandle): OffloadTensor {
    const entry = this.#take(handle);
    if (entry.kind === 'anon') {
      try {
        return tensorOf(handle, this.#anon!.readSync(entry.fd, handle.byteLength));
      } catch (err) {
        throw anonFailure(handle, this.saveDir!, err);
      } finally {
        this.#forgetAnon(entry.fd);
      }
    }
    if (entry.kind !== 'disk') return this.#fromMemory(handle, entry);
    try {
      return tensorOf(handle, readExactSync(handle, entry.path));
    } finally {
      safeUnlink(entry.path);
      this.#forgetFile(entry.path);
    }
  }

  /** {@link unpack} with non-blocking file I/O. */
  async unpackAsync(handle: ActivationHandle): Promise<OffloadTensor> {
    const entry = this.#take(handle);
    if (entry.kind === 'anon') {
      try {
        return tensorOf(handle, await this.#anon!.readAsync(entry.fd, handle.byteLength));
      } catch (err) {
        throw anonFailure(handle, this.saveDir!, err);
      } finally {
        this.#forgetAnon(entry.fd);
      }
    }
    if (entry.kind !== 'disk') return this.#fromMemory(handle, entry);
    try {
      return tensorOf(handle, await readExactAsync(handle, entry.path));
    } finally {
      await unlinkAsync(entry.path).catch(() => undefined);
      this.#forgetFile(entry.path);
    }
  }

  /**
   * Deletes every scratch file this store still has (best effort, per-file errors swallowed as in
   * the original), drops every held tensor, and makes further pack/unpack throw. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    unregisterStore(this.token);
    for (const path of [...this.#files.keys()]) {
      safeUnlink(path);
      this.#forgetFile(path);
    }
    for (const path of this.#pending) safeUnlink(path);
    for (const fd of [...this.#anonBytes.keys()]) this.#forgetAnon(fd);
    this.#anon?.releaseAll();
    this.#entries.clear();
    this.#stats.residentBytes = 0;
  }

  #assertOpen(op: string): void {
    if (this.#closed) throw closedError(op);
  }

  #nextPath(): string {
    const path = join(this.saveDir!, `${this.filePrefix}${this.#seq}.bin`);
    this.#seq += 1;
    return path;
  }

  #newHandle(tensor: OffloadTensor, byteLength: number, location: 'memory' | 'disk'): ActivationHandle {
    return Object.freeze({
      id: this.#stats.tensorsPacked,
      dtype: tensor.dtype,
      dims: Object.freeze([...tensor.dims]),
      byteLength,
      location,
    });
  }

  #packMemory(tensor: OffloadTensor, bytes: Uint8Array): ActivationHandle {
    const entry: Entry = this.target === 'keep' ? { kind: 'keep', tensor } : { kind: 'copy', buffer: copyOf(bytes) };
    return this.#addMemory(tensor, entry, bytes.byteLength);
  }

  #addMemory(tensor: OffloadTensor, entry: Entry, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'memory');
    this.#entries.set(handle, entry);
    const s = this.#stats;
    s.tensorsPacked += 1;
    s.bytesPacked += byteLength;
    s.residentBytes += byteLength;
    s.peakResidentBytes = Math.max(s.peakResidentBytes, s.residentBytes);
    return handle;
  }

  #addDisk(tensor: OffloadTensor, path: string, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'disk');
    this.#entries.set(handle, { kind: 'disk', path });
    this.#files.set(path, byteLength);
    this.#countWritten(byteLength);
    return handle;
  }

  #addAnon(tensor: OffloadTensor, fd: number, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'disk');
    this.#entries.set(handle, { kind: 'anon', fd });
    this.#anonBytes.set(fd, byteLength);
    this.#countWritten(byteLength);
    return handle;
  }

  /** Counts a tensor written to a scratch file, named or anonymous. */
  #countWritten(byteLength: number): void {
    const s = this.#stats;
    s.tensorsPacked += 1;
    s.bytesPacked += byteLength;
    s.filesWritten += 1;
    s.diskBytes += byteLength;
    s.peakDiskBytes = Math.max(s.peakDiskBytes, s.diskBytes);
  }

  /** Closes an anonymous file (the kernel frees it) and counts it deleted. */
  #forgetAnon(fd: number): void {
    const bytes = this.#anonBytes.get(fd);
    if (bytes === undefined) return;
    this.#anonBytes.delete(fd);
    this.#anon?.release(fd);
    this.#stats.diskBytes -= bytes;
    this.#stats.filesDeleted += 1;
  }

  #fallback(tensor: OffloadTensor, bytes: Uint8Array, error: unknown): ActivationHandle {
    this.#stats.writeFallbacks += 1;
    const err = error instanceof Error ? error : new Error(String(error));
    try {
      this.#onWriteError?.(err, bytes.byteLength);
    } catch {
      // a throwing observer must not lose the tensor
    }
    return this.#addMemory(tensor, { kind: 'copy', buffer: copyOf(bytes) }, bytes.byteLength);
  }

  #take(handle: ActivationHandle): Entry {
    this.#assertOpen('unpack');
    const entry = this.#entries.get(handle);
    if (!entry) {
      if (this.#consumed.has(handle)) {
        throw new HandleError(
          `unpack: activation #${handle.id} was already unpacked; each handle unpacks exactly once`,
        );
      }
      throw new HandleError(
        'unpack: this handle does not belong to this store (pack and unpack on the same ActivationStore)',
      );
    }
    this.#entries.delete(handle);
    this.#consumed.add(handle);
    this.#stats.tensorsUnpacked += 1;
    return entry;
  }

  #fromMemory(handle: ActivationHandle, entry: Entry): OffloadTensor {
    this.#stats.residentBytes -= handle.byteLength;
    if (entry.kind === 'keep') return entry.tensor;
    if (entry.kind === 'copy') return tensorOf(handle, entry.buffer);
    throw new Error('unreachable');
  }

  #forgetFile(path: string): void {
    const bytes = this.#files.get(path);
    if (bytes === undefined) return;
    this.#files.delete(path);
    this.#stats.diskBytes -= bytes;
    this.#stats.filesDeleted += 1;
  }
}

function openSaveDir(saveDir: string, cwd: string): string {
  const first = resolveSaveDir(saveDir, cwd);
  if (!first.ok) throw new OffloadConfigError(first.reason);
  try {
    mkdirSync(first.path, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new OffloadConfigError(`save_dir '${saveDir}': cannot create '${first.path}' (${errCode(err)})`, {
      cause: err,
    });
  }
  // Check again now that it exists: a component swapped for a symlink in between is caught here.
  const second = resolveSaveDir(first.path, cwd);
  if (!second.ok) throw new OffloadConfigError(second.reason);
  return second.path;
}
