// slow: a 2 GiB checkpoint file (sparse on disk, every byte still read, hashed and sent) pushed to and pulled
// from the test Hub server, each in a child process whose peak RSS is measured.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHubServer, useTempDir } from '@soup/test-utils';
import { measureTransferRss } from '../bench/_rss';

const GIB = 1024 ** 3;
// soup's peak RSS during a transfer stays this close to its baseline, whatever the checkpoint's size.
const LIMIT_MIB = 128;

describe('slow: constant memory for any file size', () => {
  it('a push and a pull of a 2 GiB file stay under 128 MiB of RSS above the baseline', {
    timeout: 600_000,
  }, async () => {
    const work = useTempDir('soup-rss-');
    const server = await startHubServer({ dir: join(work, 'hub') });
    try {
      const got = await measureTransferRss({ server, workDir: work, repo: 'soup-test/rss', bytes: 2 * GIB });
      expect(got.push.overBaselineMiB).toBeLessThanOrEqual(LIMIT_MIB);
      expect(got.pull.overBaselineMiB).toBeLessThanOrEqual(LIMIT_MIB);
      // The bytes really went through: the pulled file has the pushed size and its last written byte.
      const pulled = join(work, 'pulled', 'checkpoint-10', 'optimizer.pt');
      expect(statSync(pulled).size).toBe(2 * GIB);
      const stored = server.files('soup-test/rss')?.['ckpt/checkpoint-10/optimizer.pt'];
      expect(stored?.size).toBe(2 * GIB);
      expect(stored?.lfs).toBeDefined();
      expect(server.errors).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
