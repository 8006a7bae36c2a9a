// Frees the backing memory of typed arrays the segmented step owns as soon as they are dead,
// rather than whenever V8 next collects garbage. onnxruntime-node returns every output as a new
// ArrayBuffer (a copy), and a segmented step makes hundreds of MiB of them per step: left to the
// garbage collector they pile up (and, promoted to the old generation, wait for a full GC).
// Transferring a buffer in a message detaches it; posted to a closed port, the message is
// dropped and the memory released. Only buffers nothing else can see may be passed here.
import { MessageChannel, type MessagePort } from 'node:worker_threads';

let sink: MessagePort | null = null;

/**
 * Detaches and frees the ArrayBuffers behind `views`. Skips undefined and already detached
 * ones, and any view that does not span its whole buffer (a buffer shared with other views).
 */
export function releaseBuffers(views: Iterable<ArrayBufferView | null | undefined>): void {
  const buffers = new Set<ArrayBuffer>();
  for (const v of views) {
    const b = v?.buffer;
    if (b instanceof ArrayBuffer && b.byteLength > 0 && v!.byteOffset === 0 && v!.byteLength === b.byteLength)
      buffers.add(b);
  }
  if (buffers.size === 0) return;
  if (sink === null) {
    const channel = new MessageChannel();
    channel.port2.close();
    sink = channel.port1;
    sink.unref();
  }
  sink.postMessage(null, [...buffers]);
}
