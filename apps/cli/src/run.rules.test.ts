// `soup run` claims only what it can prove (issue 19), through the real bin on a directory store, each
// case against a trainer that misbehaves: an early exit 0, half-written checkpoints, leftovers, soup's own
// death, a crash right after a save, a final/ without weights, --json on a second signal.
import { runNode, useTempDir } from '@soup/test-utils';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  nodeTrainerArgv,
  pointerOf,
  SOUP_BIN,
  soupEnv,
  soupRun,
  soupRunUntil,
  storeSteps,
  TINY_SAFETENSORS_JS,
  trainerPid,
  writeFakeCheckpoint,
} from '../test/run-helpers';

const OPTIONS = [
  '--repo',
  'file://store',
  '--output-dir',
  'out',
  '--batch-size',
  '4',
  '--settle',
  '300ms',
  '--poll',
  '100ms',
];
const ARGV = nodeTrainerArgv({ maxSteps: 60, saveSteps: 10 });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^[ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '');
  } catch {
    return true;
  }
};
const waitGone = async (pid: number, ms: number): Promise<boolean> => {
  for (let t = 0; t < ms && alive(pid); t += 100) await new Promise((r) => setTimeout(r, 100));
  return !alive(pid);
};
describe('[slow] soup run: a complete run needs its horizon (case 1)', { timeout: 240_000 }, () => {
  it(
    'an exit 0 at step 23 of 60 (stopped from outside soup) is a segment: exit 75 naming step and ' +
      'horizon, no final/',
    async () => {
      const cwd = useTempDir('soup-run-early-');
      const r = await soupRun(
        cwd,
        [...OPTIONS, '--json'],
        ARGV,
        soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '20', SOUP_EXAMPLE_FAULT: 'stop-at:23' }),
      );
      expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(r.stderr).toContain('the trainer exited 0 at step 23, before its horizon of 60 steps');
      expect(JSON.parse(r.stdout)).toMatchObject({
        ok: true,
        status: 'segment',
        exit_code: 75,
        final_step: 23,
        horizon: 60,
        session_end: { reason: 'before-horizon' },
      });
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 23, terminal: false });
      expect(existsSync(join(cwd, 'store', 'final'))).toBe(false);
      // The next session continues from 23 and ends the run.
      const s2 = await soupRun(cwd, OPTIONS, ARGV, soupEnv(cwd));
      expect(s2.code, s2.stderr).toBe(0);
      expect(s2.stdout).toContain(`trainer: resumed from ${join(cwd, 'out', 'checkpoint-23')} at step 23`);
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 60, terminal: true });
    },
  );
});

/**
 * A trainer with no marker file: checkpoint-<k>/ gets model.bin in chunks, then optimizer.bin, with
 * random pauses (below --settle) between writes; it exits (0 or 1) mid-write of a random checkpoint.
 * Every file ends with "END<size>", so a partial copy is seen by its bytes.
 */
const CHUNKY = `
const fs = require('node:fs'), path = require('node:path');
const out = process.env.SOUP_OUTPUT_DIR, seed = Number(process.env.SEED);
let x = seed * 2654435761 % 4294967296 || 1;
const rnd = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const CHUNK = 64 * 1024, CHUNKS = 6;
(async () => {
  const dieAt = 1 + Math.floor(rnd() * 3), dieChunk = Math.floor(rnd() * (2 * CHUNKS));
  for (let k = 1; k <= 3; k++) {
    const dir = path.join(out, 'checkpoint-' + k);
    fs.mkdirSync(dir, { recursive: true });
    let n = 0;
    for (const f of ['model.bin', 'optimizer.bin']) {
      const fd = fs.openSync(path.join(dir, f), 'w');
      for (let c = 0; c < CHUNKS; c++, n++) {
        if (k === dieAt && n === dieChunk) { fs.closeSync(fd); process.exit(rnd() < 0.5 ? 0 : 1); }
        const buf = Buffer.alloc(CHUNK, k);
        if (c === CHUNKS - 1) buf.write('END' + CHUNK * CHUNKS, CHUNK - 16);
        fs.writeSync(fd, buf);
        await sleep(Math.floor(rnd() * 120));
      }
      fs.closeSync(fd);
      await sleep(Math.floor(rnd() * 120));
    }
    await sleep(400 + Math.floor(rnd() * 300));
  }
})();
`;

function wholeFolder(dir: string): string[] {
  const bad: string[] = [];
  for (const f of ['model.bin', 'optimizer.bin']) {
    const p = join(dir, f);
    if (!existsSync(p)) {
      bad.push(`${f} missing`);
      continue;
    }
    const b = readFileSync(p);
    if (
      b.length !== 6 * 64 * 1024 ||
      !b
        .subarray(b.length - 16)
        .toString('latin1')
        .startsWith(`END${b.length}`)
    )
      bad.push(`${f} partial (${b.length} bytes)`);
  }
  return bad;
}

describe('[slow] soup run: a checkpoint without a marker counts only once settled (case 2)', {
  timeout: 600_000,
}, () => {
  it('20 runs at random write timings, killed mid-write: no pointer ever names a partial checkpoint', async () => {
    const report: string[] = [];
    let pointed = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const cwd = useTempDir('soup-run-chunky-');
      const r = await soupRun(
        cwd,
        [
          '--repo',
          'file://store',
          '--output-dir',
          'out',
          '--complete-file',
          '',
          '--settle',
          '500ms',
          '--poll',
          '50ms',
          '--keep-remote',
          '1000',
        ],
        [process.execPath, '-e', CHUNKY],
        soupEnv(cwd, { SEED: String(seed) }),
      );
      // Every pointer move soup made names a step whose pushed copy is whole (the store keeps them all).
      for (const m of r.stdout.matchAll(
        /pushed ckpt\/checkpoint-(\d+) \(step \d+, \d+ files, verified; latest\.json moved\)/g,
      )) {
        pointed++;
        const bad = wholeFolder(join(cwd, 'store', 'ckpt', `checkpoint-${m[1]}`));
        if (bad.length > 0) report.push(`seed ${seed}: pointer on checkpoint-${m[1]}: ${bad.join(', ')}`);
      }
      const p = pointerOf(join(cwd, 'store'));
      if (p !== null) {
        const bad = wholeFolder(join(cwd, 'store', ...p.path_in_repo.split('/')));
        if (bad.length > 0)
          report.push(`seed ${seed}: final pointer on ${p.path_in_repo} (exit ${r.code}): ${bad.join(', ')}`);
      }
    }
    process.stdout.write(`case 2: 20 runs, ${pointed} pointer moves, ${report.length} on a partial checkpoint\n`);
    expect(report).toEqual([]);
    expect(pointed).toBeGreaterThan(0);
  });
});

describe("[slow] soup run: only this run's checkpoints (case 4)", { timeout: 240_000 }, () => {
  it(
    'a leftover checkpoint-5 and an argv without {output_dir}: warned, never pushed, no terminal ' + 'pointer',
    async () => {
      const cwd = useTempDir('soup-run-leftover-');
      writeFakeCheckpoint(cwd, 5, { root: 'output' });
      const r = await runNode([SOUP_BIN, 'run', '--repo', 'file://st', '--', process.execPath, '-e', '0'], {
        cwd,
        env: soupEnv(cwd),
        timeoutMs: 120_000,
      });
      expect(r.stderr).toMatch(/warning: output already holds a checkpoint from before this launch \(checkpoint-5\)/);
      expect(r.stderr).toMatch(/warning: the trainer command has no \{output_dir\}/);
      expect(existsSync(join(cwd, 'st', 'ckpt', 'checkpoint-5'))).toBe(false);
      expect(pointerOf(join(cwd, 'st'))?.terminal ?? false).toBe(false);
      expect(r.code).toBe(EXIT_CODES.usage);
      expect(r.stderr).toContain('pass --final <dir>');
    },
  );

  it("a leftover newer step (checkpoint-500) does not hide the trainer's own checkpoints", async () => {
    const cwd = useTempDir('soup-run-leftover-newer-');
    writeFakeCheckpoint(cwd, 500);
    const r = await soupRun(
      cwd,
      [...OPTIONS, '--time-limit', '3s'],
      ARGV,
      soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '60' }),
    );
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r.stderr).toContain('(checkpoint-500)');
    expect(storeSteps(cwd)).not.toContain(500);
    const p = pointerOf(join(cwd, 'store'));
    expect(p?.step ?? 0).toBeGreaterThan(0);
    expect(p!.step).toBeLessThan(60);
  });
});

describe('[slow] soup run: no orphans (case 5)', { timeout: 240_000 }, () => {
  it('SIGHUP ends the session like SIGTERM: the trainer saves, soup pushes and exits 75', async () => {
    const cwd = useTempDir('soup-run-hup-');
    const { child, exited, output } = await soupRunUntil(
      cwd,
      OPTIONS,
      ARGV,
      soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '60' }),
      /pushed ckpt\/checkpoint-10 /,
    );
    const pid = trainerPid(output);
    child.kill('SIGHUP');
    const r = await exited;
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r.stdout).toMatch(/session ending \(signal SIGHUP\): sending SIGTERM to the trainer/);
    expect(r.stdout).toMatch(/segment saved \(signal SIGHUP\): step \d+ is saved/);
    expect(await waitGone(pid, 5000)).toBe(true);
  });

  it(
    'soup SIGKILLed: the trainer stops within seconds; a second soup refuses while an earlier trainer ' + 'lives',
    async () => {
      const cwd = useTempDir('soup-run-orphan-');
      // A trainer that survives its stdout going away (EPIPE ignored, as under nohup or a logger): only soup can end
      // it.
      const quiet = [
        process.execPath,
        '-e',
        "process.stdout.on('error', () => {}); setInterval(() => console.log('trainer: tick'), 200)",
        '{output_dir}',
      ];
      const { child, output } = await soupRunUntil(
        cwd,
        ['--repo', 'file://store', '--output-dir', 'out'],
        quiet,
        soupEnv(cwd),
        /trainer: tick/,
      );
      const pid = trainerPid(output);
      child.kill('SIGKILL');
      const gone = await waitGone(pid, 10_000);
      if (!gone) process.kill(pid, 'SIGKILL'); // leave no orphan behind, even when the test fails
      expect(gone).toBe(true);

      // The lock names a live process as the earlier trainer: a second supervisor is refused, naming it.
      const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      try {
        const start = readFileSync(`/proc/${other.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19];
        mkdirSync(join(cwd, 'out'), { recursive: true });
        writeFileSync(
          join(cwd, 'out', '.soup-run.lock'),
          JSON.stringify({
            format: 'soup-run-lock/1',
            host: (await import('node:os')).hostname(),
            pid: 999_999,
            start: null,
            trainer_pid: other.pid,
            trainer_start: start,
            started_at: '2026-01-01T00:00:00Z',
          }),
        );
        const r = await soupRun(cwd, OPTIONS, ARGV, soupEnv(cwd));
        expect(r.code).toBe(EXIT_CODES.usage);
        expect(r.stderr).toContain(`its trainer (pid ${other.pid}) still lives`);
        expect(r.stdout).not.toContain('launched trainer');
      } finally {
        other.kill('SIGKILL');
      }
    },
  );
});

describe('[slow] soup run: exit with what was saved (case 6)', { timeout: 240_000 }, () => {
  for (const fault of ['crash-after-save:20', 'sigkill-after-save:20']) {
    it(`${fault}: checkpoint-20 is pushed before soup exits, and the trainer's status passes through`, async () => {
      const cwd = useTempDir('soup-run-after-save-');
      // --settle 1m: nothing settles during the run; only "a newer one appeared" and the exit push.
      const opts = [
        '--repo',
        'file://store',
        '--output-dir',
        'out',
        '--batch-size',
        '4',
        '--settle',
        '1m',
        '--poll',
        '100ms',
        '--json',
      ];
      const r = await soupRun(
        cwd,
        opts,
        ARGV,
        soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '30', SOUP_EXAMPLE_FAULT: fault }),
      );
      expect(r.code).toBe(fault.startsWith('crash') ? 3 : 128 + 9);
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 20, terminal: false });
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, status: 'failed', final_step: 20 });
    });
  }
});

describe('[slow] soup run: final/ holds weights (case 7)', { timeout: 240_000 }, () => {
  it(
    'a log at the top and the model in a subfolder: no terminal pointer, the files named, --final ' +
      'suggested; --final works',
    async () => {
      const cwd = useTempDir('soup-run-final-');
      const script =
        "const fs = require('node:fs'), p = require('node:path'), o = process.env.SOUP_OUTPUT_DIR; " +
        "fs.mkdirSync(p.join(o, 'model'), { recursive: true });" +
        "fs.writeFileSync(p.join(o, 'train_log.txt'), 'loss 1.0\\n'); fs.writeFileSync(p.join(o, 'model', " +
        `'model.safetensors'), ${TINY_SAFETENSORS_JS});`;
      const opts = ['--repo', 'file://store', '--output-dir', 'out'];
      const r = await soupRun(cwd, opts, [process.execPath, '-e', script], soupEnv(cwd));
      expect(r.code).toBe(EXIT_CODES.usage);
      expect(r.stderr).toMatch(
        /final\/ would hold no model weights: the top of .*out has train_log\.txt .*no terminal pointer was written\. Pass --final <dir>/,
      );
      expect(pointerOf(join(cwd, 'store'))?.terminal ?? false).toBe(false);
      const ok = await soupRun(cwd, [...opts, '--final', 'out/model'], [process.execPath, '-e', script], soupEnv(cwd));
      expect(ok.code, ok.stderr).toBe(0);
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ path_in_repo: 'final', terminal: true });
    },
  );
});

describe('[slow] soup run: smaller items (case 8)', { timeout: 240_000 }, () => {
  it('--json prints one JSON result on a second signal (exit 130)', async () => {
    const cwd = useTempDir('soup-run-json130-');
    const child = spawn(process.execPath, [SOUP_BIN, 'run', ...OPTIONS, '--json', '--grace', '5m', '--', ...ARGV], {
      cwd,
      env: soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100', SOUP_EXAMPLE_FAULT: 'ignore-sigterm' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const seen = (re: RegExp): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (re.test(stderr)) resolve();
          else setTimeout(check, 50);
        };
        check();
      });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null }>((resolve) => child.on('close', (code) => resolve({ code })));
    await seen(/trainer: fresh start/);
    child.kill('SIGTERM');
    await seen(/sending SIGTERM to the trainer/);
    child.kill('SIGTERM');
    const r = { ...(await exited), stdout };
    expect(r.code).toBe(EXIT_CODES.interrupted);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, outcome: 'interrupted', error: { exit_code: 130 } });
  });

  it('pushed_steps is empty when a failing session pushed nothing (not the step it resumed from)', async () => {
    const cwd = useTempDir('soup-run-pushed-step-');
    const s1 = await soupRun(
      cwd,
      [...OPTIONS, '--time-limit', '3s'],
      ARGV,
      soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '60' }),
    );
    expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
    const saved = pointerOf(join(cwd, 'store'))!.step;
    const r = await soupRun(
      cwd,
      [...OPTIONS, '--json'],
      ARGV,
      soupEnv(cwd, { SOUP_EXAMPLE_FAULT: `exit:${saved + 1}:7` }),
    );
    expect(r.code).toBe(7);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', pushed_steps: [], final_step: saved });
    expect(r.stderr).toContain(`nothing new was pushed; the store still points at step ${saved}`);
  });

  it('help shows durations with units (a bare number means seconds)', async () => {
    const r = await runNode([SOUP_BIN, 'run', '--help'], { timeoutMs: 60_000 });
    expect(r.stdout).toMatch(/--settle <duration>[\s\S]*default 10s/);
    expect(r.stdout).toMatch(/--grace <duration>[\s\S]*default 2m/);
    expect(r.stdout).not.toMatch(/\(default: (10000|120000|1000)\)/);
    expect(r.stdout).toContain('a bare number means seconds');
    // The lease's default depends on the store: said in words and units, never commander's raw milliseconds.
    expect(r.stdout).toMatch(
      /--lease-ttl <duration>[\s\S]*default:\s+2m\s+on\s+a\s+directory\s+store,\s+10m\s+on\s+the\s+Hub/,
    );
    expect(r.stdout).not.toMatch(/\(default: \d{4,}\)/);
  });
});
