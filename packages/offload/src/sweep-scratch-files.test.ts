import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runNode, spawnUntil, useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { STORE_CHILD, TSX_IMPORT } from './_fixtures/paths';
import { ActivationStore } from './activation-store';
import { OffloadConfigError } from './errors';
import { sweepScratchFiles } from './sweep-scratch-files';

const FOREIGN = ['notes.txt', 'soup-act-notes.bin', 'soup-act-12-zzzzzzzz-1.bin', 'soup-act-1-deadbeef-1.pt'];

function startChild(mode: string, saveDir: string, cwd: string, extra: string[] = []) {
  return spawnUntil(
    process.execPath,
    ['--import', TSX_IMPORT, STORE_CHILD, mode, saveDir, ...extra],
    mode === 'hold' ? /HELD .*\n/ : /CHURNING \d+\n/,
    {
      cwd,
      timeoutMs: 50_000,
    },
  );
}

describe('crash recovery', () => {
  test('[slow] a run SIGKILLed mid-step leaves files; the next store sweeps them all and nothing else', {
    timeout: 60_000,
  }, async () => {
    const cwd = useTempDir();
    const dir = join(cwd, 'acts');
    mkdirSync(dir);
    for (const name of FOREIGN) writeFileSync(join(dir, name), 'keep me');
    const { child, exited } = await startChild('churn', 'acts', cwd);
    await new Promise((r) => setTimeout(r, 100)); // let it run a few steps
    child.kill('SIGKILL');
    const end = await exited;
    expect(end.signal).toBe('SIGKILL');

    const leftovers = readdirSync(dir).filter((n) => !FOREIGN.includes(n));
    expect(leftovers.length).toBeGreaterThanOrEqual(1); // at least the long-lived activation
    for (const name of leftovers) expect(name.startsWith(`soup-act-${child.pid}-`)).toBe(true);

    const store = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    expect(store.stats.sweptFiles).toBe(leftovers.length);
    expect(readdirSync(dir).sort()).toEqual([...FOREIGN].sort());
    store.close();
    expect(readdirSync(dir).sort()).toEqual([...FOREIGN].sort());
  });

  test('[slow] stores of live processes are never swept; once the owner dies they are', {
    timeout: 60_000,
  }, async () => {
    const cwd = useTempDir();
    const dir = join(cwd, 'acts');
    const mine = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    const h1 = mine.pack({ dtype: 'int32', dims: [3], data: Int32Array.of(1, 2, 3) });
    mine.pack({ dtype: 'int32', dims: [1], data: Int32Array.of(4) });

    const { child, output, exited } = await startChild('hold', 'acts', cwd, ['3']);
    const held = JSON.parse(output.slice(output.indexOf('HELD ') + 5).split('\n')[0]!) as {
      pid: number;
      prefix: string;
    };
    expect(held.pid).toBe(child.pid);

    // a second store in this process and the sweep function both leave live files alone
    const second = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    expect(second.stats.sweptFiles).toBe(0);
    expect(sweepScratchFiles({ saveDir: 'acts', cwd })).toEqual([]);
    expect(readdirSync(dir)).toHaveLength(5);

    child.kill('SIGKILL');
    await exited;
    const third = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    expect(third.stats.sweptFiles).toBe(3);
    const left = readdirSync(dir);
    expect(left).toHaveLength(2);
    for (const name of left) expect(name.startsWith(mine.filePrefix)).toBe(true);
    expect(Array.from(mine.unpack(h1).data as Int32Array)).toEqual([1, 2, 3]);

    for (const s of [mine, second, third]) s.close();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('sweepScratchFiles', () => {
  test('removes files of a dead pid and of closed stores of this pid; leaves others and non-files', async () => {
    const cwd = useTempDir();
    const dir = join(cwd, 'acts');
    mkdirSync(dir);
    const dead = await runNode(['-e', 'console.log(process.pid)']);
    const deadPid = Number(dead.stdout.trim());
    const stale = [
      `soup-act-${deadPid}-0badc0de-0.bin`,
      `soup-act-${deadPid}-0badc0de-17.bin`,
      `soup-act-${process.pid}-deadbeef-3.bin`,
    ];
    for (const name of [...stale, ...FOREIGN]) writeFileSync(join(dir, name), 'x');
    // a directory with a matching name is not ours to remove
    mkdirSync(join(dir, `soup-act-${deadPid}-0badc0de-99.bin`));

    expect(sweepScratchFiles({ saveDir: 'acts', cwd }).sort()).toEqual([...stale].sort());
    expect(readdirSync(dir).sort()).toEqual([...FOREIGN, `soup-act-${deadPid}-0badc0de-99.bin`].sort());
  });

  test('a closed store’s leftover name (same pid) is stale; an open one is not', () => {
    const cwd = useTempDir();
    const open = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    const closed = new ActivationStore({ target: 'disk', saveDir: 'acts', cwd });
    closed.close();
    writeFileSync(join(cwd, 'acts', `${open.filePrefix}500.bin`), 'x');
    writeFileSync(join(cwd, 'acts', `${closed.filePrefix}500.bin`), 'x');
    expect(sweepScratchFiles({ saveDir: 'acts', cwd })).toEqual([`${closed.filePrefix}500.bin`]);
    open.close();
  });

  test('refuses a save dir outside cwd', () => {
    const cwd = useTempDir();
    expect(() => sweepScratchFiles({ saveDir: '../', cwd })).toThrow(OffloadConfigError);
  });
});
