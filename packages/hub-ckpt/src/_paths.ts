import { UnsafePathError } from './errors';

/** Why a relative file name is unsafe, or null when it is fine. */
export function unsafeReason(name: string): string | null {
  if (name === '') return 'it is empty';
  if (name.includes('\0')) return 'it contains a NUL byte';
  if (name.includes('\\')) return 'it contains a backslash';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'it is an absolute path';
  for (const seg of name.split('/')) {
    if (seg === '..') return 'it contains ".."';
    if (seg === '' || seg === '.') return 'it has an empty or "." segment';
  }
  return null;
}

/** Throws UnsafePathError unless `name` is a plain relative `/`-separated path. */
export function assertSafeName(name: string): void {
  const reason = unsafeReason(name);
  if (reason !== null) throw new UnsafePathError(name, reason);
}

/**
 * A repo path as @huggingface/hub's `downloadFile` and `listFiles` need it: they paste `path` into the URL as
 * given, so `#` would start a fragment, `?` a query, `%20` would arrive as a space and a tab would be dropped.
 * Each segment is percent-encoded and the `/` kept, as huggingface_hub's `hf_hub_url` does with `quote`.
 */
export function hubUrlPath(name: string): string {
  return name.split('/').map(encodeURIComponent).join('/');
}
