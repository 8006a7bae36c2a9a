import { sha256Hex } from './_fs';

/** Who wrote a contested file, from its bytes (a pointer names its run and step). */
export function describeWriter(bytes: Uint8Array | null): string {
  if (bytes === null) return 'it was deleted';
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes)) as { run?: unknown; step?: unknown; updated_at?: unknown };
    if (typeof v.run === 'string' && typeof v.step === 'number') {
      return (
        `now run "${v.run}" at step ${v.step}` +
        `${typeof v.updated_at === 'string' ? `, written ${v.updated_at}` : ''}`
      );
    }
  } catch {
    // not JSON
  }
  return `now ${bytes.length} bytes with sha256 ${sha256Hex(bytes).slice(0, 12)}…`;
}
