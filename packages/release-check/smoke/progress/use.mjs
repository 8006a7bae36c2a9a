// Installed alone: plain progress lines into a pipe-like stream, a field list fitted to a width, a refused total.
import { createProgress, fitFields, formatDuration, InvalidProgressOptionError } from '@soup/progress';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const chunks = [];
let t = 0;
const stream = { write: (s) => void chunks.push(s), isTTY: false };
const bar = createProgress({ label: 'train', total: 10, unit: 'step', stream, env: {}, delayMs: 0, now: () => t });
for (let i = 1; i <= 10; i++) {
  t += 100;
  bar.update(i);
}
bar.done();
const lines = chunks.join('').trimEnd().split('\n');
check(lines[0] === 'train: 1/10 (10%)', `first line: ${lines[0]}`);
check(lines.at(-1) === 'train: 10/10 steps in 1.0s', `summary: ${lines.at(-1)}`);
check(fitFields(['loss 2.31', 'lr 1e-4', 'eta 5s'], 12) === 'loss 2.31', 'fitFields');
check(formatDuration(65_000) === '1m05s', 'formatDuration');
let refused = null;
try {
  createProgress({ label: 'x', total: -1, stream });
} catch (err) {
  refused = err;
}
check(refused instanceof InvalidProgressOptionError && refused.code === 'SOUP_PROGRESS_INVALID_OPTION', 'refused');
console.log('SMOKE OK');
