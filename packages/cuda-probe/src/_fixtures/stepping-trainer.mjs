// A trainer that runs at most CAP of its STEPS and evaluates for the rest, as long and as loud as a
// step (so neither the wall clock nor the output can tell): argv STEPS CAP [STATE_DIR] [STEP_MS].
// Each line behind a launcher's `[rank0]:` prefix; with STATE_DIR, the HF Trainer's
// STATE_DIR/checkpoint-<ran>/trainer_state.json with the steps it ran.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [steps, cap] = process.argv.slice(2, 4).map(Number);
const stateDir = process.argv[4] || null;
const stepMs = Number(process.argv[5] ?? 5);
let ran = 0;
for (let i = 1; i <= steps; i++) {
  const until = Date.now() + stepMs;
  while (Date.now() < until); // the step's (or the evaluation's) work
  if (i <= cap) ran = i;
  console.log(`[rank0]: ${i <= cap ? 'step' : 'eval'} ${i} loss ${(1 / i).toFixed(4)}`);
}
if (stateDir) {
  const dir = join(stateDir, `checkpoint-${ran}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: ran, max_steps: steps }));
}
