import { unlink as unlinkAsync } from 'node:fs/promises';
import { join } from 'node:path';
import { AnonymousFiles } from './_anon-files';
import { tensorBytes } from './_dtype';
import { memoryBackedFs, memoryBackedWarning } from './_fs-type';
import { openSaveDir } from './_open-save-dir';
import { quote } from './_quote';
import { registerStore, unregisterStore } from './_registry';
import { newToken, storePrefix, sweepDir } from './_scratch';
import { writeScratchAsync, writeScratchSync } from './_scratch-write';
import { type StoreEntry, StoreLedger } from './_store-ledger';
import { tensorOf, copyOf, readExactSync, readExactAsync, anonFailure, closedError, safeUnlink } from './_store-io';
import { OffloadConfigError } from './errors';
import type { ActivationHandle, ActivationStoreOptions } from './activation-store-options';
import type { ActivationStoreStats, OffloadTarget, OffloadTensor } from './types';

export type { ActivationHandle, ActivationStoreOptions } from './activation-store-options';

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
  /** Entries, live files and stats. */
  readonly #ledger: StoreLedger;
  /** Anonymous files (`anonymousFiles`), null when off. */
  readonly #anon: AnonymousFiles | null;
  /** Paths an async pack is creating right now. */
  readonly #pending = new Set<string>();
  #seq = 0;
  #closed = false;
  /** Background fdatasyncs not finished yet (`pack` with `fsync: 'data'`). */
  #syncing = 0;

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
    this.#ledger = new StoreLedger(this.target);

    if (this.target === 'disk') {
      const saveDir = options.saveDir;
      if (typeof saveDir !== 'string' || saveDir === '') {
        throw new OffloadConfigError(
          "activation_offloading='disk' requires save_dir (saveDir: a scratch directory under the working directory).",
        );
      }
      this.saveDir = openSaveDir(saveDir, options.cwd ?? process.cwd());
      if (options.sweep ?? true) this.#ledger.stats.sweptFiles = sweepDir(this.saveDir).length;
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
    return { ...this.#ledger.stats };
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
    return this.#ledger.size;
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
        return this.#ledger.addAnon(tensor, fd, bytes.byteLength);
      }
    }
    let lastError: unknown;
    const flushes = {
      start: () => {
        this.#syncing += 1;
      },
      end: () => {
        this.#syncing -= 1;
      },
    };
    for (let attempt = 0; attempt < EEXIST_RETRIES; attempt += 1) {
      const path = this.#nextPath();
      const written = writeScratchSync(path, bytes, this.#fsync, flushes);
      if (written.ok) return this.#ledger.addDisk(tensor, path, bytes.byteLength);
      lastError = written.error;
      if (!written.retry) break;
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
        return this.#ledger.addAnon(tensor, fd, bytes.byteLength);
      }
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < EEXIST_RETRIES; attempt += 1) {
      const path = this.#nextPath();
      this.#pending.add(path);
      const written = await writeScratchAsync(path, bytes, this.#fsync);
      this.#pending.delete(path);
      if (!written.ok) {
        lastError = written.error;
        if (written.retry) continue;
        break;
      }
      if (this.#closed) {
        await unlinkAsync(path).catch(() => undefined);
        throw closedError('pack');
      }
      return this.#ledger.addDisk(tensor, path, bytes.byteLength);
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
    this.#assertOpen('unpack');
    const entry = this.#ledger.take(handle);
    if (entry.kind === 'anon') {
      try {
        return tensorOf(handle, this.#anon!.readSync(entry.fd, handle.byteLength));
      } catch (err) {
        throw anonFailure(handle, this.saveDir!, err);
      } finally {
        this.#forgetAnon(entry.fd);
      }
    }
    if (entry.kind !== 'disk') return this.#ledger.fromMemory(handle, entry);
    try {
      return tensorOf(handle, readExactSync(handle, entry.path));
    } finally {
      safeUnlink(entry.path);
      this.#ledger.forgetFile(entry.path);
    }
  }

  /** {@link unpack} with non-blocking file I/O. */
  async unpackAsync(handle: ActivationHandle): Promise<OffloadTensor> {
    this.#assertOpen('unpack');
    const entry = this.#ledger.take(handle);
    if (entry.kind === 'anon') {
      try {
        return tensorOf(handle, await this.#anon!.readAsync(entry.fd, handle.byteLength));
      } catch (err) {
        throw anonFailure(handle, this.saveDir!, err);
      } finally {
        this.#forgetAnon(entry.fd);
      }
    }
    if (entry.kind !== 'disk') return this.#ledger.fromMemory(handle, entry);
    try {
      return tensorOf(handle, await readExactAsync(handle, entry.path));
    } finally {
      await unlinkAsync(entry.path).catch(() => undefined);
      this.#ledger.forgetFile(entry.path);
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
    for (const path of this.#ledger.filePaths()) {
      safeUnlink(path);
      this.#ledger.forgetFile(path);
    }
    for (const path of this.#pending) safeUnlink(path);
    for (const fd of this.#ledger.anonFds()) this.#forgetAnon(fd);
    this.#anon?.releaseAll();
    this.#ledger.clear();
  }

  #assertOpen(op: string): void {
    if (this.#closed) throw closedError(op);
  }

  #nextPath(): string {
    const path = join(this.saveDir!, `${this.filePrefix}${this.#seq}.bin`);
    this.#seq += 1;
    return path;
  }

  #packMemory(tensor: OffloadTensor, bytes: Uint8Array): ActivationHandle {
    const entry: StoreEntry =
      this.target === 'keep' ? { kind: 'keep', tensor } : { kind: 'copy', buffer: copyOf(bytes) };
    return this.#ledger.addMemory(tensor, entry, bytes.byteLength);
  }

  /** Closes an anonymous file (the kernel frees it) and counts it deleted. */
  #forgetAnon(fd: number): void {
    this.#ledger.forgetAnon(fd, (d) => this.#anon?.release(d));
  }

  #fallback(tensor: OffloadTensor, bytes: Uint8Array, error: unknown): ActivationHandle {
    this.#ledger.stats.writeFallbacks += 1;
    const err = error instanceof Error ? error : new Error(String(error));
    try {
      this.#onWriteError?.(err, bytes.byteLength);
    } catch {
      // a throwing observer must not lose the tensor
    }
    return this.#ledger.addMemory(tensor, { kind: 'copy', buffer: copyOf(bytes) }, bytes.byteLength);
  }
}
