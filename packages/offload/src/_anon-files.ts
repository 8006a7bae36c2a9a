// Anonymous scratch files (Linux `O_TMPFILE`): a file with no name in the save dir, reachable only
// through its descriptor. Nothing can be left behind: when the process dies — SIGKILL and the OOM
// killer included — the kernel closes the descriptor and frees the file. The store keeps one
// descriptor per packed tensor until it is unpacked or the store closes.
import { closeSync, fdatasync, fstatSync, fsyncSync, openSync, read, readSync, write, writeSync } from 'node:fs';
import { promisify } from 'node:util';

// O_TMPFILE = __O_TMPFILE | O_DIRECTORY: 0o20000000 | 0o200000 on x86-64, arm64 and most other
// Linux ABIs; Node does not export it. Elsewhere open() fails and the store uses named files.
const O_TMPFILE = 0o20200000;
const O_RDWR = 2;
/** Errors that mean "this system or file system has no O_TMPFILE": use named files instead. */
const UNSUPPORTED: ReadonlySet<string> = new Set(['EOPNOTSUPP', 'ENOTSUP', 'EISDIR', 'EINVAL']);

const writeP = promisify(write);
const readP = promisify(read);
const fdatasyncP = promisify(fdatasync);

interface FdState {
  /** A background flush is running on it: close when it ends. */
  flushing: boolean;
  closeRequested: boolean;
}

/** The anonymous files of one store. */
export class AnonymousFiles {
  readonly #dir: string;
  #supported = process.platform === 'linux';
  readonly #open = new Map<number, FdState>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Whether anonymous files can still be tried (false after the file system refused one). */
  get supported(): boolean {
    return this.#supported;
  }

  /** Open descriptors (one per file the store holds, plus those closing after their flush). */
  get openCount(): number {
    return this.#open.size;
  }

  /**
   * A new anonymous file, or null when O_TMPFILE is not available here (then never tried again).
   * @throws other open errors (EMFILE, ENOSPC, …)
   */
  create(): number | null {
    if (!this.#supported) return null;
    try {
      const fd = openSync(this.#dir, O_TMPFILE | O_RDWR, 0o600);
      this.#open.set(fd, { flushing: false, closeRequested: false });
      return fd;
    } catch (err) {
      if (UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? '')) {
        this.#supported = false;
        return null;
      }
      throw err;
    }
  }

  writeSync(fd: number, bytes: Uint8Array, flush: boolean | 'data'): void {
    let offset = 0;
    while (offset < bytes.byteLength) {
      const n = writeSync(fd, bytes, offset, bytes.byteLength - offset, offset);
      if (n <= 0) throw new Error(`write returned ${n}`);
      offset += n;
    }
    if (flush === true) fsyncSync(fd);
    else if (flush === 'data') this.#flushInBackground(fd);
  }

  async writeAsync(fd: number, bytes: Uint8Array, flush: boolean | 'data'): Promise<void> {
    let offset = 0;
    while (offset < bytes.byteLength) {
      const { bytesWritten } = await writeP(fd, bytes, offset, bytes.byteLength - offset, offset);
      if (bytesWritten <= 0) throw new Error(`write returned ${bytesWritten}`);
      offset += bytesWritten;
    }
    if (flush !== false) await fdatasyncP(fd);
  }

  /** The file's bytes; throws `{size}` when it does not hold `byteLength` bytes. */
  readSync(fd: number, byteLength: number): ArrayBuffer {
    const size = fstatSync(fd).size;
    if (size !== byteLength) throw new SizeMismatch(size);
    const buffer = new ArrayBuffer(byteLength);
    const view = new Uint8Array(buffer);
    let offset = 0;
    while (offset < byteLength) {
      const n = readSync(fd, view, offset, byteLength - offset, offset);
      if (n <= 0) throw new SizeMismatch(offset);
      offset += n;
    }
    return buffer;
  }

  async readAsync(fd: number, byteLength: number): Promise<ArrayBuffer> {
    const size = fstatSync(fd).size;
    if (size !== byteLength) throw new SizeMismatch(size);
    const buffer = new ArrayBuffer(byteLength);
    const view = new Uint8Array(buffer);
    let offset = 0;
    while (offset < byteLength) {
      const { bytesRead } = await readP(fd, view, offset, byteLength - offset, offset);
      if (bytesRead <= 0) throw new SizeMismatch(offset);
      offset += bytesRead;
    }
    return buffer;
  }

  /** Closes a file (the kernel frees it); deferred until its background flush ends. */
  release(fd: number): void {
    const st = this.#open.get(fd);
    if (!st) return;
    if (st.flushing) {
      st.closeRequested = true;
      return;
    }
    this.#open.delete(fd);
    safeClose(fd);
  }

  releaseAll(): void {
    for (const fd of [...this.#open.keys()]) this.release(fd);
  }

  #flushInBackground(fd: number): void {
    const st = this.#open.get(fd);
    if (!st) return;
    st.flushing = true;
    // On a libuv pool thread while the caller goes on. The descriptor stays open until the flush
    // ends, so its number cannot be reused by another file while the flush is queued.
    fdatasync(fd, () => {
      st.flushing = false;
      if (st.closeRequested) this.release(fd);
    });
  }
}

/** The anonymous file holds another number of bytes than the handle says. */
export class SizeMismatch extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`size ${size}`);
    this.size = size;
  }
}

function safeClose(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
