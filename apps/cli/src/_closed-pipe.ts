// A closed stdout (`soup … | head -1`) must not crash a command or stop training: the output just stops.

/** A writable that may report a closed pipe through an 'error' event (process.stdout, process.stderr). */
interface GuardedStream {
  on(event: 'error', listener: (err: NodeJS.ErrnoException) => void): unknown;
  write(chunk: string): unknown;
}

const guarded = new WeakSet<object>();

/**
 * Swallows EPIPE (the reader went away) and the "write after end" errors that follow it on `stream`,
 * and turns later writes into no-ops. Any other stream error is rethrown as before.
 */
export function ignoreClosedPipe(stream: GuardedStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  let closed = false;
  const write = stream.write.bind(stream) as (chunk: string) => unknown;
  stream.write = (chunk: string): unknown => (closed ? true : write(chunk));
  stream.on('error', (err) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' || err.code === 'ERR_STREAM_WRITE_AFTER_END') {
      closed = true;
      return;
    }
    throw err;
  });
}
