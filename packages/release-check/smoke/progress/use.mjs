// Installed alone: a progress renderer drawing to a pipe-like stream, its lines and summary read back.
import { createProgress, fitFields, formatDuration, withProgress } from '@soup/progress';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const chunks = [];
const stream = { write: (s) => void chunks.push(s), isTTY: false };
let t = 0;
const bar = createProgress({ label: 'train', total: 10, unit: 'step', stream, now: () => t, env: {}, delayMs: 0 });
const steps = await withProgress(
  bar,
  async () => {
    for (let i = 1; i <= 10; i++) {
      t += 100;
      bar.update(i, `loss ${(2 - i / 10).toFixed(1)}`);
    }
    return 10;
  },
  (n) => `${n} steps`,
);
const lines = chunks.join('').trimEnd().split('\n');
check(steps === 10 && lines.length === 11, `lines: ${lines.length}`);
check(lines[0] === 'train: 1/10 (10%)  loss 1.9', `first: ${lines[0]}`);
check(lines[10] === 'train: 10/10 steps in 1.0s  10 steps', `summary: ${lines[10]}`);
check(formatDuration(125_000) === '2m05s', 'formatDuration');
check(fitFields(['train', 'loss 2.31', 'eta 4m05s'], 16) === 'train  loss 2.31', 'fitFields');
console.log('SMOKE OK');
