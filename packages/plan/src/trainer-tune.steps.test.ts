// --try for a trainer command (real children): a configuration whose trainer stops before {probe_steps}
// but evaluates as long and as loud as the steps it skipped (so neither the wall clock nor the output can
// tell) is "not timed" and never chosen once its step lines are declared (`steps.pattern`), or its
// trainer_state.json (`steps.file`). A Node trainer: the torch twin of the count itself (its lines and its
// trainer_state.json) is in @soup/cuda-probe's create-command-probe.steps.test.ts; six torch runs here take 15 s.
import { fileURLToPath } from 'node:url';
import { deviceIdentity, type StepsEvidence } from '@soup/cuda-probe';
import { useTempDir } from '@soup/test-utils';
import { tuneExec } from '@soup/tune';
import { describe, expect, it } from 'vitest';
import { trainerTuneOptions } from './trainer-tune';

const fixture = (name: string): string =>
  fileURLToPath(new URL(`../../cuda-probe/src/_fixtures/${name}`, import.meta.url));
const trainer = `${JSON.stringify(process.execPath)} ${fixture('stepping-trainer.mjs')}`;

/**
 * Tunes `cap` (the most steps the trainer runs of any run): cap=3 first, so it is timed first and never
 * stopped early; K = 2 (runs of 1, 3 and 5 steps of 60 ms: 240 ms apart, clear of a loaded machine's
 * start-up noise, so the honest row's slope is positive), G = 1. Returns the two rows' notes and the choice.
 */
async function tuneCaps(steps: StepsEvidence | undefined) {
  const cwd = useTempDir();
  const options = trainerTuneOptions({
    env: { ...process.env, HOME: cwd },
    cwd,
    signal: new AbortController().signal,
    identity: await deviceIdentity({ device: 'cpu' }),
    deviceId: 0,
    budgetBytes: null,
    timeoutMs: 30_000,
    maxLength: 8,
    quantization: 'none',
    loraR: 0,
    command: `${trainer} {probe_steps} {cap} out 60 --bs {micro_batch_size}`,
    tries: { cap: ['3', '99'] },
    micro: { globalBatchSize: 1, worldSize: 1, headroom: 0 },
    timeSteps: 2,
    start: undefined,
    refresh: true,
    noCache: true,
    cacheExceptionsOnly: true,
    predict: false,
    steps,
  });
  const { entry } = await tuneExec({ ...options, noCache: true, cache: { env: {}, homeDir: cwd, cwd } });
  const row = (label: string) => entry.rows.find((r) => r.label === label)!;
  return { capped: row('cap=3'), honest: row('cap=99'), chosen: entry.rows[entry.chosen]!.label };
}

describe("[slow] --try: a run must show its steps by the trainer's own count (real children)", {
  timeout: 30_000,
}, () => {
  it('untold: the trainer that stopped early is timed by its output, as if it ran its steps', async () => {
    const { capped } = await tuneCaps(undefined);
    expect(capped.stepMs).not.toBeNull();
    expect(capped.note ?? '').not.toMatch(/not timed/);
  });

  it('told its step lines, that trainer is not timed and not chosen', async () => {
    const { capped, honest, chosen } = await tuneCaps({ pattern: '^step (\\d+) ' });
    expect(capped).toMatchObject({ stepMs: null, note: 'not timed: the trainer counted 3 steps in a run of 5' });
    expect(honest.stepMs).not.toBeNull();
    expect(chosen).toBe('cap=99');
  });

  it('told its trainer_state.json folder, the same', async () => {
    const { capped, chosen } = await tuneCaps({ file: 'out' });
    expect(capped).toMatchObject({ stepMs: null, note: 'not timed: the trainer counted 3 steps in a run of 5' });
    expect(chosen).toBe('cap=99');
  });
});
