import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBatchSize } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';
import { ProbeChildError, ProbeOptionsError, ProbeTimeoutError } from './errors';
import { memoryCgroupSupport } from './run-in-memory-cgroup';

const MiB = 2 ** 20;
const node = JSON.stringify(process.execPath);
const cgroupWhy = memoryCgroupSupport().available ? null : 'no writable memory cgroup here';
if (cgroupWhy) console.log(`skipping the memory cgroup's own kill: ${cgroupWhy}`);

/** A trainer stand-in: allocates and touches `batch_size` MiB, holds it briefly, exits 0. */
const ALLOC_SCRIPT = `
const mib = Number(process.argv[2]);
const held = [];
for (let i = 0; i < mib; i++) held.push(Buffer.alloc(${MiB}, 1));
setTimeout(() => process.exit(held.length === mib ? 0 : 3), 150);
`;

function script(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Dead: no such process, or a zombie waiting for its (re)parent to reap it. */
function dead(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 40 && !dead(pid); i++) await new Promise((r) => setTimeout(r, 50));
  return dead(pid);
}

describe('[slow] createCommandProbe (real child processes)', { timeout: 60_000 }, () => {
  it(
    'a Node script allocating batch_size MiB under an address-space limit: fits small, OOM (V8 ' +
      'allocation failure) above',
    async () => {
      const dir = useTempDir();
      const alloc = script(dir, 'alloc.cjs', ALLOC_SCRIPT);
      // node's own VmSize at start is ~0.75 GiB on this machine: 1.25 GiB leaves ~0.5 GiB for the script.
      const probe = createCommandProbe({
        command: `${node} ${alloc} {batch_size}`,
        addressSpaceBytes: 1280 * MiB,
        timeoutMs: 30_000,
      });
      const small = await probe(16);
      expect(small).toMatchObject({
        fits: true,
        reason: 'fit',
        batchSize: 16,
        limitMethod: 'prlimit',
        addressSpaceBytes: 1280 * MiB,
      });
      const big = await probe(900);
      expect(big.fits).toBe(false);
      expect(big.reason).toBe('oom');
      expect(big.oom?.kind).toMatch(/^node-(buffer|heap)$/);
      expect(big.detail).toMatch(/out of memory at batch_size=900/);
    },
  );

  it('the sampled peak-RSS gate refuses a command that exits 0 above budgetBytes', async () => {
    const dir = useTempDir();
    const alloc = script(dir, 'alloc.cjs', ALLOC_SCRIPT);
    const probe = createCommandProbe({
      command: [process.execPath, alloc, '{batch_size}'],
      budgetBytes: 160 * MiB,
      timeoutMs: 30_000,
    });
    const small = await probe(8);
    expect(small.fits).toBe(true);
    expect(small.measurement).toBe('sampled-rss');
    expect(small.peakBytes).toBeGreaterThan(8 * MiB);
    expect(small.peakBytes).toBeLessThanOrEqual(160 * MiB);
    const big = await probe(256);
    expect(big).toMatchObject({ fits: false, reason: 'over-budget', budgetBytes: 160 * MiB });
    // Stopped while it ran, by the sampler above the budget or by its memory cgroup at the budget (under load the
    // cgroup's OOM killer can fire between two samples, the test below): the peak is then a lower bound, at or
    // above the budget, and the verdict says so; a peak read after the command exited 0 is above it.
    expect(big.peakBytes).toBeGreaterThanOrEqual(160 * MiB);
    expect(big.censored === true || big.peakBytes! > 160 * MiB, big.detail).toBe(true);
  });

  it.skipIf(cgroupWhy !== null)(
    "stopped by its memory cgroup at the budget before any sample passed it (tmpfs pages, in no process's RSS): " +
      'over-budget, the peak the budget, censored',
    async () => {
      // Files in /dev/shm are memory the cgroup is charged for and cannot reclaim (no swap here), which no RSS
      // shows: the cgroup's OOM killer, not the sampler, stops the command, as it can when a loaded machine delays
      // the sampler.
      const dir = useTempDir();
      const shm = mkdtempSync(join('/dev/shm', 'soup-probe-'));
      try {
        const fill = script(
          dir,
          'fill.cjs',
          `const fs = require('node:fs');
const fd = fs.openSync(process.argv[3], 'w');
const chunk = Buffer.alloc(${MiB}, 1);
for (let i = 0; i < Number(process.argv[2]); i++) fs.writeSync(fd, chunk);
setTimeout(() => process.exit(0), 150);
`,
        );
        const probe = createCommandProbe({
          command: [process.execPath, fill, '{batch_size}', join(shm, 'fill')],
          budgetBytes: 160 * MiB,
          timeoutMs: 30_000,
        });
        const big = await probe(256);
        expect(big, big.detail).toMatchObject({
          fits: false,
          reason: 'over-budget',
          censored: true,
          peakBytes: 160 * MiB,
          budgetBytes: 160 * MiB,
          memoryCgroup: { oomKilled: true },
        });
        expect(big.detail).toMatch(/its memory cgroup's OOM killer fired at the budget 160\.0 MiB/);
      } finally {
        rmSync(shm, { recursive: true, force: true });
      }
    },
  );

  it(
    'stops a command as soon as its sampled RSS passes budgetBytes, instead of letting it take host ' + 'memory',
    async () => {
      const dir = useTempDir();
      // Allocates batch_size MiB, then holds it for two minutes: only the probe's kill ends it before
      // the 60 s timeout (which would throw ProbeTimeoutError instead of answering).
      const pidFile = join(dir, 'hog.pid');
      const hog = script(
        dir,
        'hog.cjs',
        `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
const held = [];
for (let i = 0; i < Number(process.argv[2]); i++) held.push(Buffer.alloc(${MiB}, 1));
setTimeout(() => process.exit(0), 120_000);
`,
      );
      const probe = createCommandProbe({
        command: [process.execPath, hog, '{batch_size}'],
        budgetBytes: 160 * MiB,
        timeoutMs: 60_000,
      });
      const big = await probe(1024);
      expect(big).toMatchObject({
        fits: false,
        reason: 'over-budget',
        measurement: 'sampled-rss',
        budgetBytes: 160 * MiB,
      });
      expect(big.detail).toMatch(/stopped while running: its peak RSS .* passed the budget 160/);
      // Killed on the way up: well short of the 1 GiB it would have taken, and gone.
      expect(big.peakBytes).toBeGreaterThan(160 * MiB);
      expect(big.peakBytes).toBeLessThan(1024 * MiB);
      expect(await gone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
    },
  );

  it('with probeBatchSize finds the largest batch under the limit, the same as a linear scan', async () => {
    const dir = useTempDir();
    // Exits like a trainer: a PyTorch-style OOM message once batch_size * 10 MiB exceeds 95 MiB.
    const fake = script(
      dir,
      'trainer.cjs',
      `const bs = Number(process.argv[2]);
       if (bs * 10 > 95) { console.error('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ' + bs * 10 + '.00 MiB. GPU 0 has a total capacity of 0.10 GiB'); process.exit(1); }`,
    );
    const probe = createCommandProbe({ command: `${node} ${fake} {batch_size}`, timeoutMs: 30_000 });
    const found = await probeBatchSize(probe, { start: 4, ceiling: 32 });
    let linear = 0;
    for (let b = 1; b <= 32; b++) {
      if ((await probe(b)).fits) linear = b;
      else break;
    }
    expect(found.batchSize).toBe(9);
    expect(linear).toBe(9);
  });

  it(
    'reports the span of the output (first chunk to last, stdout and stderr together) apart from the ' +
      'wall time; none when silent',
    async () => {
      const dir = useTempDir();
      // 400 ms of start-up before the first line, 300 ms between the first line and the last, 200 ms after it.
      const talk = script(
        dir,
        'talk.cjs',
        `const wait = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
wait(400); console.log('step 1'); wait(300); console.error('step 2'); wait(200);`,
      );
      const silent = script(dir, 'silent.cjs', `setTimeout(() => {}, 200);`);
      const spoke = await createCommandProbe({
        command: [process.execPath, talk, '{batch_size}'],
        budgetBytes: 500 * MiB,
        timeoutMs: 30_000,
      })(1);
      expect(spoke.reason).toBe('fit');
      expect(spoke.outputSpanMs).toBeGreaterThanOrEqual(290);
      expect(spoke.outputSpanMs).toBeLessThan(450); // not the start-up, not the exit
      expect(spoke.ms).toBeGreaterThanOrEqual(900);
      const quiet = await createCommandProbe({
        command: [process.execPath, silent, '{batch_size}'],
        budgetBytes: 500 * MiB,
        timeoutMs: 30_000,
      })(1);
      expect(quiet.reason).toBe('fit');
      expect(quiet.outputSpanMs).toBeUndefined();
    },
  );

  it('substitutes {batch_size} after splitting and runs without a shell', async () => {
    const dir = useTempDir();
    const out = join(dir, 'argv.json');
    const echo = script(
      dir,
      'echo.cjs',
      `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({argv: process.argv.slice(2), env: ` +
        `process.env.SOUP_PROBE_BATCH_SIZE}));`,
    );
    const probe = createCommandProbe({
      command: `${node} ${echo} --bs={batch_size} "two words {batch_size}" '$HOME;rm -rf /' '|' "*"`,
      timeoutMs: 30_000,
    });
    expect((await probe(12)).fits).toBe(true);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({
      argv: ['--bs=12', 'two words 12', '$HOME;rm -rf /', '|', '*'],
      env: '12',
    });
  });

  it('a non-OOM crash propagates with the tail of stderr', async () => {
    const dir = useTempDir();
    const crash = script(
      dir,
      'crash.cjs',
      `console.error('loading shard 3 of 4'); throw new Error('dataset file train.jsonl not found');`,
    );
    const probe = createCommandProbe({ command: `${node} ${crash}`, timeoutMs: 30_000 });
    const err = await probe(4).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeChildError);
    expect(err).toMatchObject({ code: 'SOUP_PROBE_CHILD_FAILED', exitCode: 1, batchSize: 4 });
    expect((err as ProbeChildError).stderrTail).toMatch(
      /loading shard 3 of 4[\s\S]*dataset file train.jsonl not found/,
    );
    expect((err as Error).message).toMatch(/failed \(exit code 1\)/);
  });

  it('an illegal-address crash is an error even when the output also carries an allocator message', async () => {
    const dir = useTempDir();
    const crash = script(
      dir,
      'cuda-crash.cjs',
      `console.error('RuntimeError: CUDA error: an illegal memory access was encountered'); ` +
        `console.error('CUBLAS_STATUS_ALLOC_FAILED'); process.exit(1);`,
    );
    const err = await createCommandProbe({ command: `${node} ${crash}`, timeoutMs: 30_000 })(2).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProbeChildError);
    expect((err as Error).message).toMatch(/illegal-address is a crash, not an out-of-memory answer/);
  });

  it(
    'a native crash (SIGSEGV) propagates; a SIGKILL with no sign of memory is "killed by signal 9 ' +
      '(not memory)", not "does not fit"',
    async () => {
      const dir = useTempDir();
      const segv = script(dir, 'segv.cjs', `process.kill(process.pid, 'SIGSEGV');`);
      const err = await createCommandProbe({ command: `${node} ${segv}`, timeoutMs: 30_000 })(2).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ProbeChildError);
      expect(err).toMatchObject({ signal: 'SIGSEGV' });
      const killed = script(dir, 'killed.cjs', `process.kill(process.pid, 'SIGKILL');`);
      const got = await createCommandProbe({ command: `${node} ${killed}`, timeoutMs: 30_000 })(2).catch(
        (e: unknown) => e,
      );
      expect(got).toBeInstanceOf(ProbeChildError);
      expect((got as Error).message).toMatch(/killed by signal 9 \(not memory\)/);
    },
  );

  it('a hung command is killed at the timeout, with the helpers it started', async () => {
    const dir = useTempDir();
    const pids = join(dir, 'pids.txt');
    const hang = script(
      dir,
      'hang.cjs',
      `const { spawn } = require('child_process');
       const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
       require('fs').writeFileSync(${JSON.stringify(pids)}, process.pid + ' ' + helper.pid);
       setInterval(() => {}, 1000);`,
    );
    const t0 = performance.now();
    const err = await createCommandProbe({ command: `${node} ${hang}`, timeoutMs: 1500 })(8).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeTimeoutError);
    expect(err).toMatchObject({ code: 'SOUP_PROBE_TIMEOUT', timeoutMs: 1500, batchSize: 8 });
    expect(performance.now() - t0).toBeLessThan(10_000);
    const [leader, helper] = readFileSync(pids, 'utf8').split(' ').map(Number) as [number, number];
    expect(await gone(leader)).toBe(true);
    expect(await gone(helper)).toBe(true);
  });

  it('an abort signal kills the running command and rejects with its reason', async () => {
    const dir = useTempDir();
    const hang = script(dir, 'hang.cjs', `setInterval(() => {}, 1000);`);
    const ac = new AbortController();
    const pending = createCommandProbe({ command: `${node} ${hang}`, timeoutMs: 30_000, signal: ac.signal })(1);
    setTimeout(() => ac.abort(new Error('user pressed ctrl-c')), 300);
    await expect(pending).rejects.toThrow('user pressed ctrl-c');
  });
});

describe('createCommandProbe options', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an unclosed quote', { command: `python train.py --name 'oops` }, 'command'],
    ['an empty argv', { command: [] }, 'command'],
    ['a program not on PATH', { command: 'no-such-trainer-xyz --bs {batch_size}' }, 'command'],
    ['a boolean timeout', { command: [process.execPath], timeoutMs: true }, 'timeoutMs'],
    ['a fractional budget', { command: [process.execPath], budgetBytes: 1.5 }, 'budgetBytes'],
  ])('refuses %s, naming the field', (_what, opts, field) => {
    expect(() => createCommandProbe(opts as never)).toThrow(ProbeOptionsError);
    try {
      createCommandProbe(opts as never);
    } catch (err) {
      expect((err as ProbeOptionsError).field).toBe(field);
    }
  });

  it('refuses an address-space limit when prlimit is missing (never falls back to a shell)', () => {
    const empty = useTempDir();
    expect(() =>
      createCommandProbe({ command: [process.execPath], addressSpaceBytes: 2 ** 30, env: { PATH: empty } }),
    ).toThrow(/needs the prlimit program .* never runs a command through a shell/);
  });

  it.each([0, -1, 2.5, Number.NaN, true, '4'])('refuses batch size %j', async (bad) => {
    const probe = createCommandProbe({ command: [process.execPath, '-e', '0'] });
    await expect(probe(bad as never)).rejects.toMatchObject({ name: 'ProbeOptionsError', field: 'batchSize' });
  });
});
