import type { Progress } from './types';

/** Runs `fn` under `bar`: done with `info(result)` once it resolves; failed, the error passed on, when it throws. */
export async function withProgress<T>(bar: Progress, fn: () => Promise<T>, info: (result: T) => string): Promise<T> {
  try {
    const result = await fn();
    bar.done(info(result));
    return result;
  } catch (err) {
    bar.fail();
    throw err;
  }
}
