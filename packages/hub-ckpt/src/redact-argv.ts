import { createHash } from 'node:crypto';

/** Shaped like a Hugging Face token: `hf_` and at least 30 letters or digits. */
const TOKEN_SHAPED = /hf_[A-Za-z0-9]{30,}/g;

/** Words that make a flag or variable name a secret's: `--wandb_key`, `--hf-token`, `API_KEY`, `--apiKey`. */
const SECRET_WORDS = new Set(['key', 'token', 'secret', 'password', 'passwd', 'apikey', 'accesskey', 'authtoken']);

/** `--name=value`, `-n=value` or `NAME=value` (an environment assignment passed through `env`). */
const ASSIGNMENT = /^(-{0,2}[A-Za-z][A-Za-z0-9_.-]*=)(.+)$/s;

/** A run of 32 or more token characters not already a redacted value (`sha256:<hex>`). */
const LONG_RUN = /(?<![A-Za-z0-9+_-])(?<!sha256:)[A-Za-z0-9+_-]{32,}/g;

/**
 * Whether a flag or variable name says it holds a secret: its last word is key, token, secret or password
 * (`--wandb_key`, `HF_TOKEN`, `--apiKey`); `--pad_token_id` or `--key_column` name no secret.
 */
export function isSecretName(name: string): boolean {
  const words = name
    .replace(/^-+/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[-_.]+/);
  return SECRET_WORDS.has(words[words.length - 1] ?? '') || SECRET_WORDS.has(words.join(''));
}

/**
 * Whether a value of 32 or more characters looks generated (an API key, a W&B key, a base64 secret) rather than
 * written: letters and digits both, few word separators, and at least 3.4 bits of entropy per character. Model
 * names (`distilbert-base-uncased-finetuned-sst-2-english`) have many separators; runs of one character have none.
 */
export function isHighEntropy(value: string): boolean {
  if (value.length < 32 || !/[0-9]/.test(value) || !/[A-Za-z]/.test(value)) return false;
  if ((value.match(/[-_]/g) ?? []).length / value.length >= 0.1) return false;
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / value.length) * Math.log2(n / value.length);
  return bits >= 3.4;
}

function isRedactable(value: string): boolean {
  return value !== '' && !/^\{[a-z_]+\}$/.test(value) && !/^sha256:[0-9a-f]{64}$/.test(value) && value !== '***';
}

/**
 * A trainer argv fit to show or store. Replaced: every occurrence of a secret (the resolved Hub token), anything
 * shaped like a Hugging Face token (`hf_` + 30 or more alphanumerics), the value of a flag or variable whose name
 * says key, token, secret or password (`--wandb_key X`, `--hf-token=X`, `API_KEY=X`), and any high-entropy run of
 * 32 or more characters (see {@link isHighEntropy}). `mask` writes `hf_***` for a Hub token and `***` for the others
 * (for display); `sha256` writes `sha256:<hex of the value>` (for a fingerprint: a changed key still changes it, the
 * value never shows).
 */
export function redactArgv(
  argv: readonly string[],
  opts: { secrets?: ReadonlyArray<string | null | undefined>; as?: 'mask' | 'sha256' } = {},
): string[] {
  const secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 8);
  const replace = (value: string, hub: boolean): string =>
    opts.as === 'sha256' ? `sha256:${createHash('sha256').update(value).digest('hex')}` : hub ? 'hf_***' : '***';
  return argv.map((arg, i) => {
    const previous = i > 0 ? argv[i - 1]! : '';
    // The value after a secret's flag (`--wandb_key X`); a next flag is no value.
    if (/^--?[A-Za-z]/.test(previous) && !previous.includes('=') && isSecretName(previous) && !arg.startsWith('-')) {
      if (isRedactable(arg)) return replace(arg, /^hf_/.test(arg) || secrets.includes(arg));
    }
    const assigned = ASSIGNMENT.exec(arg);
    if (assigned && isSecretName(assigned[1]!.slice(0, -1)) && isRedactable(assigned[2]!)) {
      const value = assigned[2]!;
      return assigned[1]! + replace(value, /^hf_/.test(value) || secrets.includes(value));
    }
    let out = arg;
    for (const s of secrets) out = out.split(s).join(`\u0000${s}\u0000`);
    // Replace marked secrets, then token-shaped values, then other generated-looking values.
    out = out.replace(/\u0000([^\u0000]*)\u0000/g, (_m, s: string) => replace(s, true));
    out = out.replace(TOKEN_SHAPED, (m) => replace(m, true));
    return out.replace(LONG_RUN, (m) => (isHighEntropy(m) ? replace(m, false) : m));
  });
}
