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
