// supervise() continuing a run past its horizon: a run complete at step 3 (final/ and a terminal pointer) is run
// again with horizon 5. The terminal pointer is reopened, the trainer resumes from checkpoint-3, the run ends
// complete at 5 with final/ replaced, and soup_run.json records the change.
import { DirStore } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRunRecord } from './run-identity';
import { supervise, type SuperviseEvent, type SuperviseOptions } from './supervise';
import { quickSession } from './_test-session';
import { ONE_BYTE_SAFETENSORS_JS } from './_test-trainer-js';

// argv: out max_steps resume_from. A checkpoint each step (a one-byte safetensors model holding the step), then the
// final model at the top of out/ holding the step reached.
const TRAINER = `
const fs = require('node:fs'), path = require('node:path');
${ONE_BYTE_SAFETENSORS_JS}
const [out, max, resume] = [process.argv[1], Number(process.argv[2]), process.argv[3] || ''];
let step = resume ? JSON.parse(fs.readFileSync(path.join(resume, 'trainer_state.json'), 'utf8')).global_step : 0;
console.log('trainer: ' + (resume ? 'resumed at step ' + step : 'fresh') + ', horizon ' + max);
while (step < max) {
  step += 1;
  const d = path.join(out, 'checkpoint-' + step);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'model.safetensors'), st(step));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: step, max_steps: max }));
}
fs.writeFileSync(path.join(out, 'model.safetensors'), st(step));
`;

function options(cwd: string, horizon: number, events: SuperviseEvent[]): SuperviseOptions {
  return {
    ...quickSession(cwd, [process.execPath, '-e', TRAINER, '{output_dir}', '{max_steps}', '{resume_from}'], events),
    settleMs: 200,
    // final/ of the first completion is replaced under this session's lease.
    leaseTtlMs: 60_000,
    horizon,
  };
}

const finalStep = (cwd: string): number => readFileSync(join(cwd, 'store', 'final', 'model.safetensors')).at(-1)!;

describe('[slow] supervise(): a run continued to a new horizon', { timeout: 120_000 }, () => {
  it('complete at 3, then horizon 5: reopened from checkpoint-3, complete at 5, the change recorded', async () => {
    const cwd = useTempDir('soup-supervise-extend-');
    const first = await supervise(options(cwd, 3, []));
    expect(first).toMatchObject({ outcome: 'complete', step: 3 });
    expect(finalStep(cwd)).toBe(3);

    const events: SuperviseEvent[] = [];
    const second = await supervise(options(cwd, 5, events));
    const lines = events.map((e) => e.line).join('\n');
    expect(second, lines).toMatchObject({ outcome: 'complete', step: 5, run: first.run });
    expect(lines).toMatch(/was complete at step 3 .*its horizon is now 5: continuing from ckpt\/checkpoint-3/);
    expect(lines).toMatch(/extended: horizon 3 → 5 from step 3/);
    expect(finalStep(cwd)).toBe(5);
    const pointer = JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8'));
    expect(pointer).toMatchObject({ step: 5, path_in_repo: 'final', terminal: true });
    const record = await readRunRecord(new DirStore({ root: join(cwd, 'store') }));
    expect(record?.horizons).toEqual([{ from: 3, to: 5, at_step: 3, at: expect.any(String) }]);

    // The same horizon again: complete in the store, nothing launched, nothing recorded twice.
    const third = await supervise(options(cwd, 5, []));
    expect(third).toMatchObject({ outcome: 'complete', step: 5, launched: false });
    expect((await readRunRecord(new DirStore({ root: join(cwd, 'store') })))?.horizons).toHaveLength(1);
  });
});
