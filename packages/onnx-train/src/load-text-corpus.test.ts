import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { ByteTokenizer } from './byte-tokenizer';
import { DataError } from './errors';
import { loadTextCorpus } from './load-text-corpus';

describe('ByteTokenizer / loadTextCorpus', () => {
  it('round-trips any text through UTF-8 bytes', () => {
    const tok = new ByteTokenizer();
    const text = 'soup — pot: 🍲, naïve\n';
    const ids = tok.encode(text);
    expect(ids.length).toBe(Buffer.byteLength(text));
    expect(tok.decode(ids)).toBe(text);
    expect(() => tok.decode([256])).toThrow(/not a byte/);
  });

  it('concatenates files (newline-terminated), holds out the tail and hashes the bytes', () => {
    const dir = useTempDir();
    writeFileSync(join(dir, 'a.txt'), 'abcdefghij');
    writeFileSync(join(dir, 'b.txt'), 'klmnopqrs\n');
    const c = loadTextCorpus({ files: [join(dir, 'a.txt'), join(dir, 'b.txt')], evalFraction: 0.25 });
    expect(c.totalTokens).toBe(21);
    expect(Buffer.from(c.train).toString()).toBe('abcdefghij\nklmno');
    expect(Buffer.from(c.eval).toString()).toBe('pqrs\n');
    expect(c.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(loadTextCorpus({ text: 'abcdefghij\nklmnopqrs\n', evalFraction: 0.25 }).sha256).toBe(c.sha256);
  });

  it('refuses missing, empty or too-short text with the fix', () => {
    const dir = useTempDir();
    expect(() => loadTextCorpus({ files: [join(dir, 'missing.txt')] })).toThrow(DataError);
    expect(() => loadTextCorpus({ text: '' })).toThrow(/empty/);
    expect(() => loadTextCorpus({ text: 'abc', minTokens: 10, evalFraction: 0 })).toThrow(
      /at least 10 \(seqLen \+ 1\)/,
    );
  });
});
