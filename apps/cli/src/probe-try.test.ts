// soup probe --exec --try: the fastest configuration that fits, from soup's own measurements, on a
// trainer whose costs are known by construction (examples/known-cost-trainer: checkpointing
// scales memory per sample by ckpt_memory and step time by 1.3). G = 32. The Node twin here; the PyTorch
// twin's scenario is probe-try.torch.test.ts.
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import {
  baselineBytes,
  choice,
  NODE_TWIN,
  soup,
  TWIN_SCENARIO,
  type TuneJson,
  tune,
  twinScenario,
} from '../test/probe-try-helpers';

const MiB = 2 ** 20;

describe('[slow] soup probe --exec --try', { timeout: 600_000 }, () => {
  it(`Node twin: ${TWIN_SCENARIO}`, () => twinScenario([process.execPath, NODE_TWIN], 16));

  it(
    'times steps by the wall clock where the output is held until exit; a trainer that prints as it steps is ' +
      'not taken for one',
    async () => {
      const cwd = useTempDir();
      const base = await baselineBytes([process.execPath, NODE_TWIN]);
      const timedBy = async (hold: string): Promise<TuneJson> => {
        const t = await tune(
          cwd,
          [process.execPath, NODE_TWIN],
          ['--per_sample_mib', '16', '--hold_output', hold],
          Math.round(base + 96 * MiB),
          8,
        );
        expect(choice(t)).toEqual({ grad_ckpt: 'false', m: 4, a: 8 }); // 8 steps of 100 ms against 4 of 228
        return t;
      };
      // Which clock a printing trainer gets is a timing verdict (the steadier of two noise estimates, one degree of
      // freedom a row), and a timing never gates CI: a quiet CI run once read the span as no steadier. What rests on
      // no clock: its output grew with its steps, so it is never taken for a trainer that holds its output. The choice
      // between the two clocks on fixed runs is packages/tune's output-clock.test.ts.
      const printing = await timedBy('false');
      expect(printing.tune.timedBy).toMatch(
        /^the (span of the trainer's output|wall time)\b.*runs of 1, 9 and 17 steps/,
      );
      expect(printing.tune.timedBy).not.toMatch(/did not grow with the steps|printed nothing/);
      const held = await timedBy('true');
      expect(held.tune.timedBy).toMatch(
        /^the wall time of runs of 1, 9 and 17 steps \(the output did not grow with the steps/,
      );
    },
  );

  it('refuses what it cannot measure, naming the flag and the fix', async () => {
    const cwd = useTempDir();
    const cmd =
      `${process.execPath} ${NODE_TWIN} --micro_batch_size {micro_batch_size} --grad_ckpt {grad_ckpt} ` +
      `--max_steps {probe_steps}`;
    const cases: [string[], RegExp][] = [
      [['--exec', cmd, '--try', 'grad_ckpt=true,false'], /--try needs --global-batch-size G/],
      [
        ['--exec', cmd.replace('{probe_steps}', '1'), '--global-batch-size', '32', '--try', 'grad_ckpt=true,false'],
        /put \{probe_steps\} in the command/,
      ],
      [
        ['--exec', cmd, '--global-batch-size', '32', '--try', 'offload=cpu,disk'],
        /--try offload: the command has no \{offload\}/,
      ],
      [
        ['--exec', cmd, '--global-batch-size', '32', '--try', 'batch_size=1,2'],
        /\{batch_size\} is filled by soup itself/,
      ],
      [['--exec', cmd, '--global-batch-size', '32', '--try', 'grad_ckpt'], /expected NAME=v1,v2/],
      [['--try', 'grad_ckpt=true,false'], /--try applies to soup probe --exec/],
    ];
    for (const [args, message] of cases) {
      const r = await soup(['probe', ...args], cwd);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});
