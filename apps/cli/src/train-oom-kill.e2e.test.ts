// A kernel OOM kill of soup's own trainer: a memory cgroup is put around the process that trains (and only
// it) once a checkpoint is pushed, with a limit far below what it needs; the kernel's OOM killer ends it.
// soup itself survives and judges the kill as out of memory on the kernel's evidence (the log names the
// trainer's pid): with step-downs allowed it resumes from the newest complete checkpoint at the next smaller
// micro-batch and completes; with none allowed it pushes that checkpoint, releases the store's lease and exits
// with the kill's code (137), and the next session resumes bit-identical to an uninterrupted run.
// Needs root and a writable memory cgroup (v1 or v2): skipped otherwise.
import { memoryCgroupSupport } from '@soup/cuda-probe';
import { runNode, useTempDir } from '@soup/test-utils';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { assetPath } from './_assets';
import type { SessionResult as RunJson } from '@soup/supervisor';
import { EXIT_CODES } from './exit-codes';
import { maxAbsDiff } from '../test/run-helpers';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const HORIZON = 10;

const config = `base: soup/oom-kill-gpt
model: {vocab_size: 256, d_model: 128, n_heads: 4, n_layers: 4, d_ff: 512}
data:
  train: ${assetPath('corpus/train.txt')}
  val: ${assetPath('corpus/val.txt')}
  max_length: 128
training:
  steps: ${HORIZON}
  batch_size: 32
  micro_batch_size: 32
  lr: 0.003
  warmup_steps: 2
  threads: 1
  val_batches: 2
`;

const env = (cwd: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: cwd,
  NO_COLOR: '1',
  SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
});
const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

function runJson(stdout: string): RunJson {
  const line = stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
  if (!line) throw new Error(`no RUN_JSON line in:\n${stdout}`);
  return JSON.parse(line.slice('RUN_JSON '.length)) as RunJson;
}

/** A memory cgroup under this process's own, limited to `limitBytes` (swap too); removed when the test ends. */
function memoryCgroup(limitBytes: number): { dir: string; version: 1 | 2; oomKills(): number } {
  const support = memoryCgroupSupport();
  if (!support.available) throw new Error(support.reason);
  const dir = join(support.parentDir, `soup-oom-kill-${process.pid}`);
  mkdirSync(dir);
  onTestFinished(() => {
    for (let i = 0; i < 50; i++) {
      try {
        rmdirSync(dir);
        return;
      } catch {
        // a dying process still in it: wait
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
      }
    }
  });
  const set = (file: string, value: string): void => {
    if (existsSync(join(dir, file))) writeFileSync(join(dir, file), value);
  };
  if (support.version === 1) {
    set('memory.limit_in_bytes', String(limitBytes));
    set('memory.memsw.limit_in_bytes', String(limitBytes));
  } else {
    set('memory.max', String(limitBytes));
    set('memory.swap.max', '0');
  }
  return {
    dir,
    version: support.version,
    oomKills: () => {
      const text = readFileSync(join(dir, support.version === 1 ? 'memory.oom_control' : 'memory.events'), 'utf8');
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    },
  };
}

const cgroupSkip = (): string | null => {
  if (process.getuid?.() !== 0) return 'a memory cgroup needs root';
  const s = memoryCgroupSupport();
  return s.available ? null : s.reason;
};

/** Runs `soup train args` and puts its first trainer in an 8 MiB cgroup once checkpoint 2 is pushed. */
async function killFirstTrainer(cwd: string, args: string[]) {
  const child = spawn(process.execPath, [bin, ...args, '--output-dir', 'out'], {
    cwd,
    env: env(cwd),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  // The process that trains: soup's trainer child (its pid in the "launched trainer" line), else soup itself.
  const trainerPid = await new Promise<number>((resolve, reject) => {
    const check = (): void => {
      const all = out + err;
      if (/^soup: train: ([3-9]|10)\/10 \(/m.test(err) || /pushed ckpt\/checkpoint-2\b/.test(all)) {
        resolve(Number(/launched trainer \(pid (\d+)\)/.exec(all)?.[1] ?? child.pid));
      }
    };
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      check();
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      check();
    });
    child.on('close', () => reject(new Error(`soup exited before its second checkpoint:\n${out}\n${err}`)));
  });
  // 8 MiB: the trainer holds a few hundred; every new page it touches from here on is charged to the cgroup.
  const cg = memoryCgroup(8 * 2 ** 20);
  writeFileSync(join(cg.dir, 'cgroup.procs'), String(trainerPid));
  const r = await exited;
  return { r, out, err, cg, trainerPid };
}

/** The newest checkpoint-N/ with its trainer_state.json in out/checkpoints. */
function newestLocal(cwd: string): number {
  const local = readdirSync(join(cwd, 'out', 'checkpoints'))
    .filter((n) => /^checkpoint-\d+$/.test(n) && existsSync(join(cwd, 'out', 'checkpoints', n, 'trainer_state.json')))
    .map((n) => Number(n.slice('checkpoint-'.length)));
  return Math.max(...local);
}

/** A folder with soup.yaml, and the `soup train` arguments both cases run. */
function freshRun(): { cwd: string; args: string[] } {
  const cwd = useTempDir();
  writeFileSync(join(cwd, 'soup.yaml'), config);
  return { cwd, args: ['train', '-c', 'soup.yaml', '--repo', 'file://store', '--push-every-steps', '2'] };
}

const skip = cgroupSkip();
if (skip !== null) console.log(`skipped: ${skip}`);

describe.skipIf(skip !== null)('[slow] soup train: a kernel OOM kill of its trainer', { timeout: 300_000 }, () => {
  it(
    "with --max-oom-retries 0, soup judges the kill out of memory on the kernel's evidence, pushes the newest " +
      'complete checkpoint, releases the lease, exits 137; the next session resumes bit-identical',
    async () => {
      const { cwd, args } = freshRun();
      const { r, out, err, cg, trainerPid } = await killFirstTrainer(cwd, [...args, '--max-oom-retries', '0']);
      const all = `${out}\n${err}`;
      expect(cg.oomKills(), all).toBeGreaterThanOrEqual(1); // the kernel's OOM killer ended it

      // soup survived: its own exit code (the kill's, 128 + 9), its own closing line, the lease released.
      expect(r.signal, all).toBeNull();
      expect(r.code, all).toBe(137);
      // The verdict names its evidence: the kernel log's OOM kill of the trainer's own pid.
      expect(err).toMatch(
        new RegExp(
          `ran out of memory with micro 32 .*killed by SIGKILL: .*OOM killer killed its process ${trainerPid}`,
        ),
      );
      expect(err).toMatch(/the trainer failed with signal SIGKILL; (pushed step \d+|nothing new was pushed)/);
      expect(existsSync(join(cwd, 'store', 'soup-lease.json')), 'the lease is released').toBe(false);
      // The store points at the newest complete checkpoint the trainer wrote.
      const newest = newestLocal(cwd);
      expect(newest).toBeGreaterThanOrEqual(2);
      const pointer = JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8')) as { step: number };
      expect(pointer.step).toBe(newest);

      // The next session resumes from it (on a wiped disk) and ends as an uninterrupted run does.
      rmSync(join(cwd, 'out'), { recursive: true, force: true });
      const resumed = await runNode([bin, ...args, '--output-dir', 'out'], { cwd, env: env(cwd), timeoutMs: 200_000 });
      expect(resumed.code, resumed.stderr).toBe(EXIT_CODES.ok);
      expect(resumed.stdout).toContain(`resuming from ckpt/checkpoint-${newest} at step ${newest}`);
      expect(runJson(resumed.stdout)).toMatchObject({ final_step: HORIZON, final_pushed: true, start_step: newest });
      const straight = await runNode(
        [bin, 'train', '-c', 'soup.yaml', '--repo', 'file://straight-ckpt', '--output-dir', 'straight'],
        { cwd, env: env(cwd), timeoutMs: 200_000 },
      );
      expect(straight.code, straight.stderr).toBe(EXIT_CODES.ok);
      expect(sha(join(cwd, 'out', 'final', 'model.safetensors'))).toBe(
        sha(join(cwd, 'straight', 'final', 'model.safetensors')),
      );
      console.info(
        `OOM kill: trainer pid ${trainerPid} killed by the kernel (${cg.oomKills()} oom_kill), soup exit ${r.code}` +
          `, store at step ${newest}; resumed run bit-identical`,
      );
    },
  );

  it(
    'with step-downs allowed, soup steps the micro-batch down after the kill (32 → 16), resumes from the newest ' +
      'complete checkpoint in the same session and completes; the weights match an uninterrupted run',
    async () => {
      const { cwd, args } = freshRun();
      const { r, out, err, cg, trainerPid } = await killFirstTrainer(cwd, args);
      const all = `${out}\n${err}`;
      expect(cg.oomKills(), all).toBeGreaterThanOrEqual(1);
      expect(r.code, all).toBe(EXIT_CODES.ok);
      const json = runJson(out);
      expect(json, all).toMatchObject({ final_step: HORIZON, final_pushed: true, micro_batch_size: 16 });
      const downs = json.oom_step_downs ?? [];
      expect(downs, all).toHaveLength(1);
      expect(downs[0], all).toMatchObject({ from: 32, to: 16 });
      expect(downs[0]!.error).toMatch(new RegExp(`OOM killer killed its process ${trainerPid}`));
      expect(all).toMatch(/out of memory at step \d+ with micro 32 .*resuming from .*checkpoint-\d+ .*with micro 16/);
      expect(existsSync(join(cwd, 'store', 'soup-lease.json')), 'the lease is released').toBe(false);
      const pointer = JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8')) as { step: number };
      expect(pointer.step).toBe(HORIZON);
      const straight = await runNode(
        [bin, 'train', '-c', 'soup.yaml', '--repo', 'file://straight-ckpt', '--output-dir', 'straight'],
        { cwd, env: env(cwd), timeoutMs: 200_000 },
      );
      expect(straight.code, straight.stderr).toBe(EXIT_CODES.ok);
      // A different m sums the same G sequences in another order: equal up to float rounding, as soup train's
      // other step-down tests hold it.
      const diff = maxAbsDiff(
        join(cwd, 'out', 'final', 'model.safetensors'),
        join(cwd, 'straight', 'final', 'model.safetensors'),
      );
      expect(diff).toBeLessThanOrEqual(1e-5);
      console.info(`OOM kill then step-down: pid ${trainerPid} killed, completed at m = 16, max |Δw| ${diff}`);
    },
  );
});
