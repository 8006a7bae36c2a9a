/**
 * Byte-level tokenizer: a token is one byte of the UTF-8 text (vocabulary 256), so any text
 * round-trips exactly and nothing needs training or downloading.
 */
export class ByteTokenizer {
  /** Always 256. */
  readonly vocabSize = 256;

  /** UTF-8 bytes of `text` as token ids. */
  encode(text: string): Uint8Array {
    return new TextEncoder().encode(text);
  }

  /** Text of token ids (invalid UTF-8 sequences decode to U+FFFD). */
  decode(tokens: ArrayLike<number | bigint>): string {
    const bytes = new Uint8Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) {
      const t = Number(tokens[i]);
      if (!Number.isInteger(t) || t < 0 || t > 255)
        throw new RangeError(`token ${String(tokens[i])} at ${i} is not a byte (0..255)`);
      bytes[i] = t;
    }
    return new TextDecoder().decode(bytes);
  }
}
