import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { spawnUntil, useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { STORE_CHILD, TSX_IMPORT } from './_fixtures/paths';
import { ActivationStore } from './activation-store';

const linux = process.platform === 'linux';
if (!linux) console.log('[skip] anonymous scratch files: O_TMPFILE is Linux only');

describe.skipIf(!linux)('anonymousFiles: scratch files with no name (O_TMPFILE)', () => {
  test('pack leaves no name in the save dir; unpack gives the bytes back; the counters still count', async () => {
    const cwd = useTempDir();
    const store = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd, anonymousFiles: true });
    expect(store.usesAnonymousFiles).toBe(true);
    const a = Float64Array.from({ length: 5000 }, (_, i) => Math.sin(i));
    const b = Int32Array.from({ length: 77 }, (_, i) => i * 3 - 9);
    const ha = store.pack({ dtype: 'float64', dims: [50, 100], data: a });
    const hb = await store.packAsync({ dtype: 'int32', dims: [77], data: b });
    expect(ha.location).toBe('disk');
    expect(hb.location).toBe('disk');
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
    expect(store.stats).toMatchObject({ filesWritten: 2, diskBytes: 5000 * 8 + 77 * 4, writeFallbacks: 0 });
    expect(store.unpack(hb).data).toEqual(b);
    expect((await store.unpackAsync(ha)).data).toEqual(a);
    expect(store.stats).toMatchObject({ filesDeleted: 2, diskBytes: 0 });
    const hc = store.pack({ dtype: 'uint8', dims: [3], data: Uint8Array.of(1, 2, 3) });
    store.close(); // closes the still-held file
    expect(store.stats.diskBytes).toBe(0);
    expect(() => store.unpack(hc)).toThrow(/closed/);
    expect(readdirSync(join(cwd, 'acts'))).toEqual([]);
  });

  test('[slow] a process SIGKILLed while it holds anonymous files leaves nothing, with no sweep', {
    timeout: 60_000,
  }, async () => {
    const cwd = useTempDir();
    const { child, output, exited } = await spawnUntil(
      process.execPath,
      ['--import', TSX_IMPORT, STORE_CHILD, 'hold-anon', 'acts', '4'],
      /HELD .*\n/,
      {
        cwd,
        timeoutMs: 50_000,
      },
    );
    const held = JSON.parse(output.slice(output.indexOf('HELD ') + 5).split('\n')[0]!) as {
      pid: number;
      files: number;
      anonymous: boolean;
    };
    expect(held).toMatchObject({ anonymous: true, files: 0 });
    // the child really holds four files in the save dir: descriptors to deleted inodes there
    const dir = join(cwd, 'acts');
    const fds = readdirSync(`/proc/${held.pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${held.pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(fds.filter((l) => l.startsWith(`${dir}/`) && l.endsWith('(deleted)'))).toHaveLength(4);
    child.kill('SIGKILL');
    expect((await exited).signal).toBe('SIGKILL');
    expect(readdirSync(dir)).toEqual([]);
  });
});
