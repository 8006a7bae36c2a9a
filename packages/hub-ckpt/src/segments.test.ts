// The two-session scenario of the P4 stop probe, on both stores: leg 1 trains to a mid-run stop and
// pushes, the disk is wiped, leg 2 resumes from the store and runs to the horizon, pushes final/ and a
// terminal pointer. A toy trainer makes "resumed exactly where it stopped" checkable bit for bit.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StaleRunError } from './errors';
import { planSegment } from './plan-segment';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { resolveResume } from './resolve-resume';
import { makeTestStore, STORE_KINDS } from './_test-helpers';
import type { CheckpointStore, Pointer } from './types';

const WIDTH = 512;

function trainStep(w: Float64Array, step: number): void {
  for (let i = 0; i < w.length; i++) w[i] = (w[i] ?? 0) * 0.999 + Math.sin(step * 0.37 + i) * 1e-3;
}

function save(dir: string, step: number, w: Float64Array): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'model.safetensors'), Buffer.from(w.buffer, w.byteOffset, w.byteLength));
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: step }));
}

function load(dir: string): { step: number; w: Float64Array } {
  const bytes = readFileSync(join(dir, 'model.safetensors'));
  const w = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  return {
    step: (JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as { global_step: number }).global_step,
    w,
  };
}

interface RunJson {
  finalStep: number | null;
  segmentStop: boolean | null;
  complete: boolean;
  w: Float64Array | null;
}

/** One session of a trainer on an empty disk `disk`. */
async function session(p: {
  store: CheckpointStore;
  run: string;
  disk: string;
  horizon: number;
  pushEvery: number;
  stopAfterSteps: number;
}): Promise<RunJson> {
  const outcome = await resolveResume({ store: p.store, run: p.run });
  if (outcome.outcome === 'complete') return { finalStep: outcome.step, segmentStop: null, complete: true, w: null };
  let start = 0;
  let w: Float64Array = new Float64Array(WIDTH).fill(0.5);
  if (outcome.outcome === 'resume') {
    const pulled = await pullCheckpoint({
      store: p.store,
      pathInRepo: outcome.pathInRepo,
      dir: join(p.disk, 'resume'),
      expectedManifestSha256: outcome.manifestSha256,
    });
    const state = load(pulled.dir);
    expect(state.step).toBe(outcome.step);
    start = state.step;
    w = state.w;
  }
  const plan = planSegment({
    horizon: p.horizon,
    pushEvery: p.pushEvery,
    stopAfterSteps: p.stopAfterSteps,
    startStep: start,
  });
  const out = join(p.disk, 'out');
  for (let step = start + 1; step <= plan.stopStep; step++) {
    trainStep(w, step);
    if (plan.pushSteps.includes(step)) {
      const dir = join(out, `checkpoint-${step}`);
      save(dir, step, w);
      await pushCheckpoint({ store: p.store, step, dir, run: p.run });
    }
  }
  if (plan.pushFinal) {
    const dir = join(out, 'final');
    save(dir, plan.stopStep, w);
    await pushFinal({ store: p.store, step: plan.stopStep, dir, run: p.run });
  }
  return { finalStep: plan.stopStep, segmentStop: plan.segmentStop, complete: false, w };
}

async function listing(store: CheckpointStore): Promise<{ steps: number[]; hasFinal: boolean; pointer: Pointer }> {
  const all = await store.list({ prefix: '' });
  const steps = [
    ...new Set(
      all
        .map((e) => /^ckpt\/checkpoint-(\d+)\//.exec(e.path)?.[1])
        .filter((s) => s !== undefined)
        .map(Number),
    ),
  ].sort((a, b) => a - b);
  const raw = await store.readFile({ path: 'latest.json' });
  return {
    steps,
    hasFinal: all.some((e) => e.path.startsWith('final/')),
    pointer: JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array())) as Pointer,
  };
}

describe.each(STORE_KINDS)('segments across sessions on %s store (P4 probe checks)', (kind) => {
  it(
    'stop at a segment boundary, wipe the disk, cold-resume to the horizon, identical to one ' + 'uninterrupted run',
    async () => {
      const t = await makeTestStore(kind);
      const STEPS = 180;
      const PUSH_EVERY = 60;
      const STOP1 = 120;
      const run = 'probe-fp-1';
      const disk = join(t.work, 'disk');

      const rj1 = await session({
        store: t.reopen(),
        run,
        disk,
        horizon: STEPS,
        pushEvery: PUSH_EVERY,
        stopAfterSteps: STOP1,
      });
      const after1 = await listing(t.store);
      rmSync(disk, { recursive: true, force: true }); // the next session starts on an empty disk
      const rj2 = await session({
        store: t.reopen(),
        run,
        disk,
        horizon: STEPS,
        pushEvery: PUSH_EVERY,
        stopAfterSteps: 0,
      });
      const after2 = await listing(t.store);

      const reference = new Float64Array(WIDTH).fill(0.5);
      for (let s = 1; s <= STEPS; s++) trainStep(reference, s);

      const checks = {
        leg1_stopped_at_the_stop_step: rj1.finalStep === STOP1,
        leg1_reported_a_segment: rj1.segmentStop === true,
        leg1_pushed_every_interval: JSON.stringify(after1.steps) === JSON.stringify([60, 120]),
        leg1_pointer_at_stop: after1.pointer.step === STOP1 && after1.pointer.terminal === false,
        leg2_resumed_and_finished: rj2.finalStep === STEPS,
        leg2_was_not_a_segment: rj2.segmentStop === false,
        leg2_pushed_final: after2.hasFinal,
        all_steps_present: JSON.stringify(after2.steps) === JSON.stringify([60, 120, 180]),
        leg2_pointer_terminal:
          after2.pointer.step === STEPS && after2.pointer.path_in_repo === 'final' && after2.pointer.terminal,
        resumed_bit_for_bit: rj2.w !== null && Buffer.from(rj2.w.buffer).equals(Buffer.from(reference.buffer)),
      };
      expect(checks).toEqual(Object.fromEntries(Object.keys(checks).map((k) => [k, true])));

      // A third session of the same run has nothing to do; another run is refused.
      rmSync(disk, { recursive: true, force: true });
      expect(
        await session({ store: t.reopen(), run, disk, horizon: STEPS, pushEvery: PUSH_EVERY, stopAfterSteps: 0 }),
      ).toMatchObject({ complete: true, finalStep: 180 });
      await expect(
        session({
          store: t.reopen(),
          run: 'probe-fp-2',
          disk,
          horizon: STEPS,
          pushEvery: PUSH_EVERY,
          stopAfterSteps: 0,
        }),
      ).rejects.toBeInstanceOf(StaleRunError);
    },
  );
});
