// The Blob the Hub commit reads local files through: 4 MiB chunks (the client hashes and uploads through
// stream()), Blob's slice rules, and a refusal once the file changed after it was opened.
import { useTempDir } from '@soup/test-utils';
import { randomBytes } from 'node:crypto';
import { appendFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileBlob } from './_file-blob';

const MIB = 1024 * 1024;

async function chunksOf(b: Blob): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const c of b.stream() as unknown as AsyncIterable<Uint8Array>) out.push(c);
  return out;
}

const openFds = () => readdirSync('/proc/self/fd').length;

describe('FileBlob', () => {
  it('streams a file in 4 MiB chunks, its bytes unchanged (openAsBlob streams 64 KiB chunks)', async () => {
    const f = join(useTempDir('soup-fileblob-'), 'optimizer.pt');
    const bytes = randomBytes(9 * MIB + 5);
    writeFileSync(f, bytes);
    const chunks = await chunksOf(await FileBlob.open(f));
    expect(chunks.map((c) => c.length)).toEqual([4 * MIB, 4 * MIB, MIB + 5]);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  });

  it('slices as a Blob does (negative offsets from the end, clamped, empty when reversed)', async () => {
    const f = join(useTempDir('soup-fileblob-'), 'state.json');
    const bytes = randomBytes(100);
    writeFileSync(f, bytes);
    const file = await FileBlob.open(f);
    const plain = new Blob([bytes]);
    for (const [a, b] of [
      [0, 100],
      [10, 20],
      [-30, -5],
      [90, 500],
      [50, 40],
      [-500, 3],
    ] as const) {
      const got = file.slice(a, b);
      expect(got).toBeInstanceOf(Blob);
      expect(got.size).toBe(plain.slice(a, b).size);
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(await plain.slice(a, b).arrayBuffer()))).toBe(
        true,
      );
    }
    expect(await file.slice(10, 20).slice(2, 4).text()).toBe(new TextDecoder().decode(bytes.subarray(12, 14)));
    expect(Buffer.from(await new Response(file.slice(5, 9)).arrayBuffer()).equals(bytes.subarray(5, 9))).toBe(true);
  });

  it('refuses a file that changed after it was opened (size or mtime), leaving no descriptor open', async () => {
    const dir = useTempDir('soup-fileblob-');
    const grown = join(dir, 'grown.bin');
    const touched = join(dir, 'touched.bin');
    writeFileSync(grown, randomBytes(MIB));
    writeFileSync(touched, randomBytes(MIB));
    const a = await FileBlob.open(grown);
    const b = await FileBlob.open(touched);
    const before = openFds();
    appendFileSync(grown, 'more');
    utimesSync(touched, new Date(), new Date(Date.now() + 5000));
    await expect(a.arrayBuffer()).rejects.toMatchObject({ name: 'NotReadableError' });
    await expect(chunksOf(b)).rejects.toThrow(/changed after it was opened/);
    expect(openFds()).toBe(before);
  });
});
