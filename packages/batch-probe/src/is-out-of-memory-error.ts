import { OutOfMemoryError } from './errors';

/**
 * The default `isOom` of the search: `err` is this package's {@link OutOfMemoryError}, or any
 * error carrying its stable code `SOUP_OOM` (so an error thrown by a second copy of this package,
 * or rebuilt from a child process's report, still counts).
 */
export function isOutOfMemoryError(err: unknown): boolean {
  if (err instanceof OutOfMemoryError) return true;
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'SOUP_OOM';
}
