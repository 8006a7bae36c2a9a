// [slow: two sessions of a data-parallel run and an uninterrupted reference, the only way to show a resume across
// world layouts ends on the same weights] Issue 45's acceptance on localhost: session 1 is 2 nodes × 1 rank, one
// `soup run` per node in its own uts namespace (node 1 as nobody), one directory store, one shared output folder;
// node 1 alone is SIGTERMed mid-run: both ranks save the same step, node 0 pushes it, both exit 75. Session 2 is one
// node × 2 ranks (examples/launch-ranks.mjs), the same G. The final weights are an uninterrupted single-node run's
// (Node twin: bit for bit; PyTorch twin, float64: within 1e-6 relative); the store holds one run, leases by node 0
// only, and no file node 1 wrote. The PyTorch twin is skipped with the reason printed where torch is missing.
import { type ChildResult, useTempDir } from '@soup/test-utils';
import { chmodSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { NOBODY, owners, startSoupNode } from '../test/node-helpers';
import { freePort, LAUNCH_RANKS, maxRelDiff } from '../test/rank-helpers';
import {
  NODE_TRAINER,
  PYTHON,
  pointerOf,
  readJson,
  referenceOutput,
  sha256File,
  soupEnv,
  TORCH_TRAINER,
  torchMissing,
} from '../test/run-helpers';

const missing = await torchMissing();
if (missing) process.stdout.write(`several-nodes.acceptance.e2e.test.ts: PyTorch twin skipped: ${missing}\n`);

const STEPS = 10;
/** m 1 × a `accum` per rank, a checkpoint every step; {resume_from} filled by soup. */
const trainerArgs = (accum: number): string[] => [
  '--output_dir',
  '{output_dir}',
  '--per_device_train_batch_size',
  '1',
  '--gradient_accumulation_steps',
  String(accum),
  '--max_steps',
  String(STEPS),
  '--save_steps',
  '1',
  '--d_model',
  '16',
  '--n_layers',
  '1',
  '--seq_len',
  '16',
  '--resume_from_checkpoint',
  '{resume_from}',
];
/** The trainer under examples/launch-ranks.mjs: one command line for every layout (the layout comes from PET_*). */
const launched = (cmd: string[]): string[] => [process.execPath, LAUNCH_RANKS, '--', ...cmd, ...trainerArgs(1)];
/** torchrun's PET_* environment: `perNode` ranks on node `nodeRank` of `nnodes`. */
const layout = (p: { perNode: number; nnodes: number; nodeRank: number; port: number }) => ({
  PET_NPROC_PER_NODE: String(p.perNode),
  PET_NNODES: String(p.nnodes),
  PET_NODE_RANK: String(p.nodeRank),
  PET_MASTER_PORT: String(p.port),
});

const TWINS = [
  { name: 'Node twin', skip: null as string | null, cmd: [process.execPath, NODE_TRAINER], tolerance: 0 },
  {
    name: 'PyTorch twin (gloo, float64)',
    skip: missing,
    cmd: [PYTHON, TORCH_TRAINER, '--dtype', 'float64'],
    tolerance: 1e-6,
  },
];

describe('[slow] several nodes: the acceptance of issue 45', { timeout: 180_000 }, () => {
  for (const twin of TWINS) {
    it.skipIf(twin.skip !== null)(
      `${twin.name}: 2 nodes × 1 rank, SIGTERM on node 1, then 1 node × 2 ranks`,
      async () => {
        const cwd = useTempDir('soup-nodes-accept-');
        chmodSync(cwd, 0o777);
        // Session 1's steps are slow, so the SIGTERM sent after checkpoint-2 reaches the ranks seconds before step
        // STEPS even on a loaded machine (at 300 ms a loaded CI run once finished all 10 steps first).
        const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '300' });
        const slowEnv = { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '1000' };
        const store = join(cwd, 'store');
        const common = ['--repo', 'file://store', '--output-dir', 'out', '--batch-size', '1', '--settle', '300ms'];
        const nodeOpts = [...common, '--poll', '100ms', '--nnodes', '2', '--nodes-dir', 'nodes', '--grace', '20s'];
        const port = await freePort();
        const argv = launched(twin.cmd);
        const n0 = await startSoupNode({
          cwd,
          rank: 0,
          options: [...nodeOpts, '--node-rank', '0'],
          argv,
          env: { ...slowEnv, ...layout({ perNode: 1, nnodes: 2, nodeRank: 0, port }) },
          marker: /leading session/,
        });
        const n1 = await startSoupNode({
          cwd,
          rank: 1,
          options: [...nodeOpts, '--node-rank', '1'],
          argv,
          env: { ...slowEnv, ...layout({ perNode: 1, nnodes: 2, nodeRank: 1, port }) },
          asNobody: true,
          marker: /launched trainer/,
        });
        const hosts = new Set<string>();
        const leaseHost = (): void => {
          const f = join(store, 'soup-lease.json');
          if (existsSync(f)) hosts.add((JSON.parse(readFileSync(f, 'utf8')) as { host: string }).host);
        };
        let ended: [ChildResult, ChildResult] | null = null;
        const both = Promise.all([n0.exited, n1.exited]).then((r) => (ended = r));
        let killed = false;
        while (ended === null) {
          leaseHost();
          if (!killed && existsSync(join(cwd, 'out', 'checkpoint-2', 'trainer_state.json'))) {
            killed = true;
            n1.child.kill('SIGTERM'); // node 1 only
          }
          await new Promise((r) => setTimeout(r, 50));
        }
        const [r0, r1] = await both;
        expect(r0.code, r0.stdout + r0.stderr).toBe(EXIT_CODES.segmentSaved);
        expect(r1.code, r1.stdout + r1.stderr).toBe(EXIT_CODES.segmentSaved);
        const stoppedAt = (r: ChildResult) => Number(/trainer: stopped at step (\d+)/.exec(r.stdout)?.[1]);
        const logs = `node 0:\n${r0.stdout}${r0.stderr}\nnode 1:\n${r1.stdout}${r1.stderr}`;
        const S = stoppedAt(r0);
        expect(stoppedAt(r1), logs).toBe(S);
        expect(S, logs).toBeLessThan(STEPS);
        expect(pointerOf(store)?.step, logs).toBe(S); // node 0 pushed the step both ranks saved

        // Session 2: one node, 2 ranks under the launcher, the same G (m 1 × a 1 × 2 ranks).
        const s2 = await startSoupNode({
          cwd,
          rank: 0,
          options: [...common, '--poll', '100ms'],
          argv,
          env: { ...env, ...layout({ perNode: 2, nnodes: 1, nodeRank: 0, port: await freePort() }) },
          marker: /soup: /,
        });
        while (s2.child.exitCode === null && s2.child.signalCode === null) {
          leaseHost();
          await new Promise((r) => setTimeout(r, 50));
        }
        const r2 = await s2.exited;
        expect(r2.code, r2.stdout + r2.stderr).toBe(EXIT_CODES.ok);
        expect(r2.stdout).toMatch(new RegExp(`resuming from step ${S}`));

        // The uninterrupted single-node run at the same G: one process, m 1 × a 2.
        const ref = await referenceOutput(cwd, [...twin.cmd, ...trainerArgs(2)], {}, process.env, 'ref');
        const final = join(store, 'final', 'model.safetensors');
        if (twin.tolerance === 0) expect(sha256File(final)).toBe(sha256File(join(ref, 'model.safetensors')));
        else expect(maxRelDiff(final, join(ref, 'model.safetensors'))).toBeLessThan(twin.tolerance);

        // One run, leases by node 0 only (none left), and no store file written by node 1 (nobody).
        const pointer = pointerOf(store)!;
        expect(readJson<{ run: string }>(join(store, 'soup_run.json')).run).toBe(pointer.run);
        for (const d of readdirSync(join(store, 'ckpt')))
          expect(readJson<{ run: string }>(join(store, 'ckpt', d, 'manifest.json')).run).toBe(pointer.run);
        expect([...hosts]).toEqual(['node-0']);
        expect(existsSync(join(store, 'soup-lease.json'))).toBe(false);
        expect(owners(store).filter((f) => f.uid === NOBODY)).toEqual([]);
      },
    );
  }
});
