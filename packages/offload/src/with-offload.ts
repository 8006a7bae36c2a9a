import { storeContext } from './_context';
import { ActivationStore, type ActivationStoreOptions } from './activation-store';
import type { OffloadTarget } from './types';

/** Options of {@link withOffload}. */
export interface WithOffloadOptions extends Omit<ActivationStoreOptions, 'target' | 'saveDir'> {
  /** Aborting rejects `withOffload` at once with `signal.reason` and deletes the store's files. @default undefined */
  signal?: AbortSignal;
}

/**
 * The Python original's `offload_context`: opens an {@link ActivationStore} for `target`
 * (`null`/`undefined` → `'keep'`, i.e. no offloading), installs it for the duration of `fn`
 * (see {@link currentActivationStore}), and always closes it — deleting every scratch file — when
 * `fn` resolves, throws, or `signal` aborts (then it rejects with `signal.reason` without waiting
 * for `fn`; the store is closed, so `fn`'s later pack/unpack calls throw `StoreClosedError`).
 *
 * @throws {OffloadConfigError} for an unknown target, or `'disk'` without a valid save dir.
 */
export async function withOffload<T>(
  target: OffloadTarget | null | undefined,
  saveDir: string | null | undefined,
  fn: (store: ActivationStore) => T | Promise<T>,
  options: WithOffloadOptions = {},
): Promise<T> {
  const { signal, ...storeOptions } = options;
  signal?.throwIfAborted();
  const store = new ActivationStore({ ...storeOptions, target: target ?? 'keep', saveDir });
  let onAbort: (() => void) | undefined;
  try {
    const run = storeContext.run(store, async () => fn(store));
    if (!signal) return await run;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    run.catch(() => undefined); // if the abort wins, fn's later failure is not unhandled
    return await Promise.race([run, aborted]);
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    store.close();
  }
}
