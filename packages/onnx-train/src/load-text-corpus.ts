import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DataError } from './errors';

/** Byte tokens of a text corpus, split into a training part and a held-out evaluation tail. */
export interface TextCorpus {
  train: Uint8Array;
  eval: Uint8Array;
  /** sha256 (hex) of all the bytes, in file order: part of the run fingerprint. */
  sha256: string;
  /** Total bytes (= tokens). */
  totalTokens: number;
}

export interface LoadTextCorpusOptions {
  /** Text files, concatenated in this order (each followed by a newline if it lacks one). */
  files?: readonly string[];
  /** Text given directly (appended after the files). */
  text?: string;
  /** Fraction of the bytes held out at the end for evaluation. @default 0.1 */
  evalFraction?: number;
  /** Each split must hold at least this many tokens (seqLen + 1 for one window). @default 2 */
  minTokens?: number;
}

/** Reads text files into byte tokens and holds out the last `evalFraction` for evaluation. */
export function loadTextCorpus(options: LoadTextCorpusOptions): TextCorpus {
  const evalFraction = options.evalFraction ?? 0.1;
  if (!(evalFraction >= 0 && evalFraction < 1))
    throw new DataError(`evalFraction must be in [0, 1) (got ${evalFraction})`);
  const minTokens = options.minTokens ?? 2;
  const chunks: Uint8Array[] = [];
  for (const f of options.files ?? []) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(f);
    } catch (err) {
      throw new DataError(`cannot read training file ${f}: ${(err as Error).message}`, { cause: err });
    }
    chunks.push(bytes);
    if (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) chunks.push(Uint8Array.of(0x0a));
  }
  if (options.text !== undefined) chunks.push(new TextEncoder().encode(options.text));
  const total = chunks.reduce((n, c) => n + c.length, 0);
  if (total === 0) throw new DataError('the training text is empty: pass files (or text) with some content');
  const all = new Uint8Array(total);
  let pos = 0;
  for (const c of chunks) {
    all.set(c, pos);
    pos += c.length;
  }
  const evalLen = Math.floor(total * evalFraction);
  const train = all.subarray(0, total - evalLen);
  const held = all.subarray(total - evalLen);
  if (train.length < minTokens) {
    throw new DataError(
      `the training split has ${train.length} tokens; at least ${minTokens} (seqLen + 1) are needed: add text or ` +
        `lower seqLen`,
    );
  }
  if (evalLen > 0 && held.length < minTokens) {
    throw new DataError(
      `the eval split has ${held.length} tokens; at least ${minTokens} (seqLen + 1) are needed: raise ` +
        `evalFraction, add text, or set evalFraction to 0`,
    );
  }
  return { train, eval: held, sha256: createHash('sha256').update(all).digest('hex'), totalTokens: total };
}
