// A local file as a Blob read in 4 MiB chunks. The Hub client reads every file it commits through the Blob's
// stream(), twice for an LFS file (its sha256, then the upload), and `openAsBlob`'s stream yields 64 KiB chunks:
// hashing 64 MiB through it took 130-220 ms here, against 55 ms in 4 MiB chunks. As with `openAsBlob`, a read
// fails once the file's size or mtime differ from what they were when it was opened, so a file still being
// written is refused instead of uploaded under an oid taken from other bytes.
import { open, stat, type FileHandle } from 'node:fs/promises';

const CHUNK_BYTES = 4 * 1024 * 1024;

interface Span {
  path: string;
  start: number;
  end: number;
  /** The whole file's size and mtime when it was opened. */
  fileSize: number;
  mtimeMs: number;
}

export class FileBlob extends Blob {
  readonly #span: Span;

  // Blob declares size and type as properties, so their getters go on the prototype here.
  static {
    Object.defineProperties(FileBlob.prototype, {
      size: {
        get: function (this: FileBlob) {
          return this.#span.end - this.#span.start;
        },
        configurable: true,
      },
      type: { get: () => '', configurable: true },
    });
  }

  private constructor(span: Span) {
    super([]);
    this.#span = span;
  }

  /** The file at `path` as it is now. */
  static async open(path: string): Promise<FileBlob> {
    const s = await stat(path);
    return new FileBlob({ path, start: 0, end: s.size, fileSize: s.size, mtimeMs: s.mtimeMs });
  }

  /** As Blob.slice: offsets relative to this span, negative ones from its end. */
  override slice(start = 0, end = this.size): FileBlob {
    const at = (i: number) => Math.min(this.size, Math.max(0, i < 0 ? this.size + i : i));
    const from = at(start);
    const to = Math.max(from, at(end));
    return new FileBlob({ ...this.#span, start: this.#span.start + from, end: this.#span.start + to });
  }

  override stream(): ReadableStream<Uint8Array<ArrayBuffer>> {
    const span = this.#span;
    let fh: FileHandle | undefined;
    let pos = span.start;
    const close = async () => {
      const f = fh;
      fh = undefined;
      await f?.close();
    };
    return new ReadableStream<Uint8Array<ArrayBuffer>>({
      async pull(controller) {
        try {
          if (pos >= span.end) {
            await close();
            controller.close();
            return;
          }
          fh ??= await openUnchanged(span);
          const want = Math.min(CHUNK_BYTES, span.end - pos);
          const buf = new Uint8Array(want);
          const { bytesRead } = await fh.read(buf, 0, want, pos);
          if (bytesRead === 0) throw notReadable(span.path, 'it is shorter than when it was opened');
          pos += bytesRead;
          controller.enqueue(bytesRead === want ? buf : buf.slice(0, bytesRead));
        } catch (err) {
          await close().catch(() => {});
          throw err;
        }
      },
      cancel: close,
    });
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const out = new Uint8Array(this.size);
    let at = 0;
    for await (const chunk of this.stream() as unknown as AsyncIterable<Uint8Array>) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out.buffer;
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async text(): Promise<string> {
    return new TextDecoder().decode(await this.arrayBuffer());
  }
}

async function openUnchanged(span: Span): Promise<FileHandle> {
  const fh = await open(span.path, 'r');
  const s = await fh.stat().catch(async (err: unknown) => {
    await fh.close();
    throw err;
  });
  if (s.size !== span.fileSize || s.mtimeMs !== span.mtimeMs) {
    await fh.close();
    throw notReadable(span.path, 'it changed after it was opened for upload');
  }
  return fh;
}

function notReadable(path: string, why: string): DOMException {
  return new DOMException(`cannot read ${path}: ${why}`, 'NotReadableError');
}
