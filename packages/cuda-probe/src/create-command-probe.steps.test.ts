// Real children: a command probe told how the trainer shows its steps (a pattern over its output, the
// trainer_state.json it writes) reports the steps it ran as `stepsSeen`, whatever {probe_steps} asked.
// Each scenario runs against a Node trainer (always) and its torch twin where torch imports under
// /usr/bin/python3.
import { fileURLToPath } from 'node:url';
import { useTempDir, torchMissing } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';
import { ProbeOptionsError } from './errors';

const nodeTrainer = fileURLToPath(new URL('./_fixtures/stepping-trainer.mjs', import.meta.url));
const torchTrainer = fileURLToPath(new URL('./_fixtures/stepping_trainer.py', import.meta.url));
const torchWhy = torchMissing('/usr/bin/python3');
if (torchWhy) console.log(`skipping the torch twins: ${torchWhy}`);

const trainers = [
  { name: 'node', program: [process.execPath, nodeTrainer], skip: null as string | null },
  { name: 'torch', program: ['/usr/bin/python3', torchTrainer], skip: torchWhy },
];

describe("[slow] createCommandProbe: the trainer's own step count (real children)", { timeout: 30_000 }, () => {
  for (const t of trainers) {
    it.skipIf(t.skip !== null)(
      `${t.name}: a run of 5 steps that ran 3 shows 3, by its lines and by its state`,
      async () => {
        const cwd = useTempDir();
        // 5 steps asked, 3 run: its lines say `[rank0]: step 3`, its out/checkpoint-3/trainer_state.json 3.
        const command = [...t.program, '5', '3', 'out', '2', '{batch_size}'];
        const byLines = createCommandProbe({ command, cwd, steps: { pattern: '^step (\\d+) ' } });
        expect(await byLines(1)).toMatchObject({ fits: true, stepsSeen: 3 });
        const byState = createCommandProbe({ command, cwd, steps: { file: 'out' } });
        expect(await byState(1)).toMatchObject({ fits: true, stepsSeen: 3 });
      },
    );
  }

  it('a run that ran all its steps shows them, one told nothing has no count; a bad pattern is refused', async () => {
    const cwd = useTempDir();
    const command = [process.execPath, nodeTrainer, '6', '9', '', '2', '{batch_size}'];
    const probe = createCommandProbe({ command, cwd, steps: { pattern: 'step (?<step>\\d+) loss' } });
    expect(await probe(1)).toMatchObject({ fits: true, stepsSeen: 6 });
    expect(await createCommandProbe({ command, cwd })(1)).not.toHaveProperty('stepsSeen'); // told nothing
    expect(() => createCommandProbe({ command, cwd, steps: { pattern: 'step \\d+' } })).toThrow(ProbeOptionsError);
    expect(() => createCommandProbe({ command, cwd, steps: { file: '../out' } })).toThrow(
      /^steps\.file '\.\.\/out': give a path inside the working directory/,
    );
  });
});
