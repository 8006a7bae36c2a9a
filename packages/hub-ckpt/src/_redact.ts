/** Replaces every occurrence of each secret in `text` with `***`. */
export function redact(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const s of secrets) {
    if (s && s.length >= 4) out = out.split(s).join('***');
  }
  // Belt and braces: anything shaped like a Hugging Face token, and any Bearer credential.
  return out.replace(/\bhf_[A-Za-z0-9_]{6,}/g, 'hf_***').replace(/Bearer\s+[^\s"',]+/gi, 'Bearer ***');
}
