// What an ActivationStore holds and counts: its entries by handle (kept tensor, copy, named file,
// anonymous file), the handles already unpacked, the scratch files and anonymous descriptors still
// alive with their bytes, and the stats. How bytes get written and read stays in the store.
import { tensorOf } from './_store-io';
import { HandleError } from './errors';
import type { ActivationHandle } from './activation-store-options';
import type { ActivationStoreStats, OffloadTarget, OffloadTensor } from './types';

export type StoreEntry =
  | { kind: 'keep'; tensor: OffloadTensor }
  | { kind: 'copy'; buffer: ArrayBuffer }
  | { kind: 'disk'; path: string }
  | { kind: 'anon'; fd: number };

export class StoreLedger {
  readonly #entries = new Map<ActivationHandle, StoreEntry>();
  readonly #consumed = new WeakSet<ActivationHandle>();
  /** Completed scratch files → bytes. */
  readonly #files = new Map<string, number>();
  /** Anonymous files' descriptors → bytes. */
  readonly #anonBytes = new Map<number, number>();
  readonly stats: ActivationStoreStats;

  constructor(target: OffloadTarget) {
    this.stats = {
      target,
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
  }

  /** Handles packed and not yet unpacked. */
  get size(): number {
    return this.#entries.size;
  }

  /** Scratch files still alive. */
  filePaths(): string[] {
    return [...this.#files.keys()];
  }

  /** Anonymous files still open. */
  anonFds(): number[] {
    return [...this.#anonBytes.keys()];
  }

  /** Drops every entry (the store is closing). */
  clear(): void {
    this.#entries.clear();
    this.stats.residentBytes = 0;
  }

  #newHandle(tensor: OffloadTensor, byteLength: number, location: 'memory' | 'disk'): ActivationHandle {
    return Object.freeze({
      id: this.stats.tensorsPacked,
      dtype: tensor.dtype,
      dims: Object.freeze([...tensor.dims]),
      byteLength,
      location,
    });
  }

  addMemory(tensor: OffloadTensor, entry: StoreEntry, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'memory');
    this.#entries.set(handle, entry);
    const s = this.stats;
    s.tensorsPacked += 1;
    s.bytesPacked += byteLength;
    s.residentBytes += byteLength;
    s.peakResidentBytes = Math.max(s.peakResidentBytes, s.residentBytes);
    return handle;
  }

  addDisk(tensor: OffloadTensor, path: string, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'disk');
    this.#entries.set(handle, { kind: 'disk', path });
    this.#files.set(path, byteLength);
    this.#countWritten(byteLength);
    return handle;
  }

  addAnon(tensor: OffloadTensor, fd: number, byteLength: number): ActivationHandle {
    const handle = this.#newHandle(tensor, byteLength, 'disk');
    this.#entries.set(handle, { kind: 'anon', fd });
    this.#anonBytes.set(fd, byteLength);
    this.#countWritten(byteLength);
    return handle;
  }

  /** Counts a tensor written to a scratch file, named or anonymous. */
  #countWritten(byteLength: number): void {
    const s = this.stats;
    s.tensorsPacked += 1;
    s.bytesPacked += byteLength;
    s.filesWritten += 1;
    s.diskBytes += byteLength;
    s.peakDiskBytes = Math.max(s.peakDiskBytes, s.diskBytes);
  }

  /** Forgets an anonymous file, `release` closing it (the kernel frees it), and counts it deleted. */
  forgetAnon(fd: number, release: (fd: number) => void): void {
    const bytes = this.#anonBytes.get(fd);
    if (bytes === undefined) return;
    this.#anonBytes.delete(fd);
    release(fd);
    this.stats.diskBytes -= bytes;
    this.stats.filesDeleted += 1;
  }

  forgetFile(path: string): void {
    const bytes = this.#files.get(path);
    if (bytes === undefined) return;
    this.#files.delete(path);
    this.stats.diskBytes -= bytes;
    this.stats.filesDeleted += 1;
  }

  /** The entry of a handle, forgotten: each handle unpacks exactly once. */
  take(handle: ActivationHandle): StoreEntry {
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
    this.stats.tensorsUnpacked += 1;
    return entry;
  }

  fromMemory(handle: ActivationHandle, entry: StoreEntry): OffloadTensor {
    this.stats.residentBytes -= handle.byteLength;
    if (entry.kind === 'keep') return entry.tensor;
    if (entry.kind === 'copy') return tensorOf(handle, entry.buffer);
    throw new Error('unreachable');
  }
}
