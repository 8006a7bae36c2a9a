import { createHash } from 'node:crypto';

/** Shaped like a Hugging Face token: `hf_` and at least 30 letters or digits. */
const TOKEN_SHAPED = /hf_[A-Za-z0-9]{30,}/g;

/**
 * A trainer argv fit to show or store: every occurrence of a secret (the resolved Hub token) and of
 * anything shaped like a Hugging Face token (`hf_` + 30 or more alphanumerics) is replaced, inside an
 * argument too (`--hub_token=hf_…`). `mask` writes `hf_***` (for display); `sha256` writes
 * `sha256:<hex of the value>` (for a fingerprint: a changed token still changes it, the value never shows).
 */
export function redactArgv(
  argv: readonly string[],
  opts: { secrets?: ReadonlyArray<string | null | undefined>; as?: 'mask' | 'sha256' } = {},
): string[] {
  const secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 8);
  const replace = (value: string): string =>
    opts.as === 'sha256' ? `sha256:${createHash('sha256').update(value).digest('hex')}` : 'hf_***';
  return argv.map((arg) => {
    let out = arg;
    for (const s of secrets) out = out.split(s).join(`\u0000${s}\u0000`);
    // Replace marked secrets, then token-shaped values.
    out = out.replace(/\u0000([^\u0000]*)\u0000/g, (_m, s: string) => replace(s));
    return out.replace(TOKEN_SHAPED, (m) => replace(m));
  });
}
