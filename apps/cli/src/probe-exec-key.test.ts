// soup probe --exec: the cache key names what was measured (the content of the files the
// command names), and a bad command fails before the first trial.
import { runNode, useTempDir } from '@soup/test-utils';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function soup(args: string[], cwd: string, home: string) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 180_000,
    env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(home, 'cache.json') },
  });
}

// Holds batch_size × PER MiB (resident) for a moment.
const trainer = (per: number) =>
  `const b = Buffer.alloc(Number(process.argv[2]) * ${per} * 1024 * 1024, 1);\nsetTimeout(() => ` +
  `console.log(b.length), 300);\n`;

describe('[slow] soup probe --exec: the key covers the trainer files', { timeout: 300_000 }, () => {
  it(
    'a copy of the trainer using 2× the memory, same command from another folder, is probed, not ' +
      'served the first answer; an edit says "trainer changed"',
    async () => {
      const home = useTempDir();
      const a = join(home, 'a');
      const b = join(home, 'b');
      mkdirSync(a);
      mkdirSync(b);
      writeFileSync(join(a, 'train.mjs'), trainer(8));
      writeFileSync(join(b, 'train.mjs'), trainer(16));
      const cmd = `${process.execPath} train.mjs {batch_size}`;
      const args = ['probe', '--exec', cmd, '--budget', '400MiB', '--start', '4', '--ceiling', '64', '--json'];
      const first = await soup(args, a, home);
      expect(first.code, first.stderr).toBe(0);
      const r1 = JSON.parse(first.stdout) as {
        batch_size: number;
        cache_key: string;
        source: string;
        provenance: { base: string; files?: Record<string, string> };
      };
      expect(r1.source).toBe('probe');
      expect(r1.provenance.base).toMatch(/^exec:.* files:(.*,)?train\.mjs@[0-9a-f]{12}$/);
      expect(r1.provenance.files).toMatchObject({ 'train.mjs': expect.stringMatching(/^[0-9a-f]{12}$/) });

      const second = await soup(args, b, home);
      expect(second.code, second.stderr).toBe(0);
      const r2 = JSON.parse(second.stdout) as { batch_size: number; cache_key: string; source: string };
      expect(r2.source).toBe('probe');
      expect(r2.cache_key).not.toBe(r1.cache_key);
      expect(r2.batch_size).toBeLessThan(r1.batch_size);
      expect(second.stderr).toMatch(
        /trainer changed since the cached answer \(\d+, [^)]*\): train\.mjs \([0-9a-f]{12} → [0-9a-f]{12}\); probing again/,
      );

      // The same trainer again: served from the cache.
      const again = JSON.parse((await soup(args, a, home)).stdout) as { source: string; batch_size: number };
      expect(again).toMatchObject({ source: 'cache', batch_size: r1.batch_size });
    },
  );

  it('./nothere.sh and a non-executable file fail before the first trial, with a clear message', async () => {
    const home = useTempDir();
    writeFileSync(join(home, 'plain.sh'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(home, 'plain.sh'), 0o644);
    const missing = await soup(['probe', '--exec', './nothere.sh {batch_size}', '--no-cache'], home, home);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/\.\/nothere\.sh does not exist/);
    expect(missing.stderr).not.toMatch(/ENOENT|trying batch|batch +\d+ /);
    const plain = await soup(['probe', '--exec', './plain.sh {batch_size}', '--no-cache'], home, home);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toMatch(/\.\/plain\.sh is not executable; chmod \+x/);
    expect(plain.stderr).not.toMatch(/EACCES/);
  });
});
