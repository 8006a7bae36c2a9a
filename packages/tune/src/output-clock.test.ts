// Which clock `--try` times steps by: the output's span where it tracks the steps (a trainer that
// prints as it steps), else the wall time. Runs are made from known costs: start-up (with a swing
// from run to run, as on a shared machine) + steps × step time, and the output as each kind of
// trainer would print it.
import { describe, expect, it } from 'vitest';
import { ckptOf, tuneGradCkpt } from './_tune-exec-test-helpers';
import { clockOf, type TimedRun } from './output-clock';

const K = 8;
const STEPS = [1, 1 + K, 1 + 2 * K];
/** The start-up swing of each run, in order: two runs of three in the slow mode (+270 ms). */
const SWING = [0, 270, 0, 270, 270, 0];

/** A row's runs: `output` maps the steps to the output's span (null: printed nothing). */
function rowOf(
  stepMs: number,
  startMs: number,
  swing: readonly number[],
  output: (steps: number) => number | null,
): Map<number, TimedRun> {
  return new Map(STEPS.map((s, i) => [s, { wallMs: startMs + swing[i]! + s * stepMs + 15, spanMs: output(s) }]));
}

/** Prints one line a step: first line after step 1, last after the last step. */
const perStep = (stepMs: number) => (s: number) => (s - 1) * stepMs + 0.4;

describe('clockOf', () => {
  it("times by the output's span when it grows with the steps and agrees with the wall time", () => {
    const runs = new Map([
      [0, rowOf(100, 1100, SWING.slice(0, 3), perStep(100))],
      [1, rowOf(228, 1150, SWING.slice(3), perStep(228))],
    ]);
    const c = clockOf(runs, K);
    expect(c.clock).toBe('output');
    expect(c.why).toMatch(
      /^the span of the trainer's output, first line to last, in runs of 1, 9 and 17 steps \(start-up and exit left out/,
    );
  });

  it('times by the wall clock when the output is held until exit (it does not grow with the steps)', () => {
    const heldUntilExit = () => 0.3; // every line arrives at once, at exit
    const runs = new Map([
      [0, rowOf(100, 1100, SWING.slice(0, 3), heldUntilExit)],
      [1, rowOf(228, 1150, SWING.slice(3), heldUntilExit)],
    ]);
    expect(clockOf(runs, K)).toMatchObject({
      clock: 'wall',
      why: expect.stringMatching(/the output did not grow with the steps/),
    });
  });

  it('times by the wall clock when the output comes in bursts that do not track the steps', () => {
    // Flushed every 4 lines, and at exit: the first chunk comes after step 4 (at exit for fewer
    // steps), the last at exit, so the span grows in jumps: 0, 5 and 13 of 0, 8 and 16 steps.
    const bursts = (stepMs: number) => (s: number) => (s < 4 ? 0 : (s - 4) * stepMs);
    const runs = new Map([
      [0, rowOf(100, 1100, SWING.slice(0, 3), bursts(100))],
      [1, rowOf(228, 1150, SWING.slice(3), bursts(228))],
    ]);
    expect(clockOf(runs, K)).toMatchObject({
      clock: 'wall',
      why: expect.stringMatching(/no steadier: it grew in jumps/),
    });
  });

  it('times by the wall clock when the span, steady and growing, gives another step time than the wall clock', () => {
    // It prints as it steps, but only for 80 % of each step (the rest, say an optimizer update, after the line).
    const calm = [0, 3, 1, 2, 0, 1];
    const runs = new Map([
      [0, rowOf(100, 1100, calm.slice(0, 3), (s) => (s - 1) * 80)],
      [1, rowOf(228, 1150, calm.slice(3), (s) => (s - 1) * 182.4)],
    ]);
    expect(clockOf(runs, K)).toMatchObject({
      clock: 'wall',
      why: expect.stringMatching(/gave 80\.0 ms a step against the wall clock's 100\.\d: more apart than their noise/),
    });
  });

  it(
    "keeps the span when the wall clock is 2 % off with a noise read from one degree of freedom (Student's " +
      't, not 2)',
    () => {
      // Three runs of the first row, whose wall times happen to fall 0, 13 and 34 ms short: a wall
      // slope of 97.9 ms reading ±0.3; the second row stopped after two runs.
      const runs = new Map([
        [0, rowOf(100, 1100, [0, -13, -34], perStep(100))],
        [1, new Map([...rowOf(228, 1150, [0, 0, 0], perStep(228))].slice(0, 2))],
      ]);
      expect(clockOf(runs, K).clock).toBe('output');
    },
  );

  it('times by the wall clock when a run printed nothing', () => {
    const runs = new Map([
      [0, rowOf(100, 1100, SWING.slice(0, 3), perStep(100))],
      [1, rowOf(228, 1150, SWING.slice(3), (s) => (s === 1 ? null : perStep(228)(s)))],
    ]);
    expect(clockOf(runs, K)).toMatchObject({ clock: 'wall', why: expect.stringMatching(/a run printed nothing/) });
  });
});

/**
 * tuneExec over grad_ckpt=false (m = 4, 100 ms a step: 8 × 100 ms at G = 32) and true (m = 8,
 * 228 ms: 4 × 228 ms), whose start-up swings by 270 ms from run to run; the runs it asked for at the fitted m,
 * and those of the walk to the next smaller m.
 */
async function tuneSwinging(prints: boolean) {
  const costs = { false: { m: 4, stepMs: 100 }, true: { m: 8, stepMs: 228 } };
  let n = 0;
  const asked: string[] = [];
  const walked: string[] = [];
  const runOf = (c: 'false' | 'true', steps: number) => {
    const swing = SWING[n++ % SWING.length]!;
    return {
      ms: 1100 + swing + steps * costs[c].stepMs + 15,
      ...(prints ? { outputSpanMs: perStep(costs[c].stepMs)(steps) } : {}),
    };
  };
  const r = await tuneGradCkpt({
    timeSteps: K,
    fit: async (cmd) => {
      const c = ckptOf(cmd);
      const one = runOf(c, 1);
      return {
        batchSize: costs[c].m,
        peakBytes: 300 * 2 ** 20,
        source: 'probe',
        oneStepMs: one.ms,
        oneStepSpanMs: one.outputSpanMs ?? null,
      };
    },
    time: async (cmd, steps, m) => {
      const c = ckptOf(cmd);
      // The walk to the next smaller m (half the samples a step here: slower per sample) keeps out of the swing.
      if (m !== costs[c].m) {
        walked.push(`${c}@${m}:${steps}`);
        return {
          ms: 1100 + steps * costs[c].stepMs,
          ...(prints ? { outputSpanMs: perStep(costs[c].stepMs)(steps) } : {}),
        };
      }
      asked.push(`${c}:${steps}`);
      return runOf(c, steps);
    },
  });
  return { entry: r.entry, asked, walked };
}

describe('tuneExec: the clock', () => {
  it(
    'rules the slower configuration out after two runs when the output times the steps, where the ' +
      'swinging wall clock cannot',
    async () => {
      const printing = await tuneSwinging(true);
      expect(printing.entry.rows[printing.entry.chosen]!.values.grad_ckpt).toBe('false');
      expect(printing.entry.timedBy).toMatch(/^the span of the trainer's output/);
      expect(printing.asked).toEqual(['false:9', 'false:17', 'true:9']); // no third run of the loser
      // Each walks one divisor down, and two runs there show it cannot win (a third would be wasted).
      expect(printing.walked).toEqual(['false@2:1', 'false@2:9', 'true@4:1', 'true@4:9']);
      expect(printing.entry.rows[1]!.note).toMatch(/^stopped early: cannot win .* timed by their output/);
      expect(printing.entry.rows[0]!.stepMs).toBeCloseTo(100, 0);

      const silent = await tuneSwinging(false);
      expect(silent.entry.timedBy).toMatch(/^the wall time of runs of 1, 9 and 17 steps \(a run printed nothing/);
      expect(silent.asked).toEqual(['false:9', 'false:17', 'true:9', 'true:17']); // within the swing: timed to the end
    },
  );
});
