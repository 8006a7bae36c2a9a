// Installed alone: progress lines in a pipe, a redrawn bar on a terminal, and a failed task's bar cleared.
import { createProgress, fitFields, formatDuration, withProgress } from '@soup/progress';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const sink = (isTTY) => {
  const chunks = [];
  return { chunks, stream: { write: (s) => void chunks.push(s), isTTY, columns: 100 } };
};
const pipe = sink(false);
const bar = createProgress({ label: 'train', total: 10, unit: 'step', stream: pipe.stream, delayMs: 0, env: {} });
for (let i = 1; i <= 10; i++) bar.update(i);
bar.done();
const text = pipe.chunks.join('');
check(!text.includes('\x1b') && text.includes('train: 5/10 (50%)'), `pipe: ${text}`);
check(/train: 10\/10 steps in [\d.]+s\n$/.test(text), `summary: ${text}`);
const tty = sink(true);
const redrawn = createProgress({ label: 'push', total: 4, stream: tty.stream, delayMs: 0, env: {} });
redrawn.update(2);
check(tty.chunks.join('').startsWith('\r\x1b[K'), 'tty redraw');
let failed = null;
try {
  await withProgress(
    redrawn,
    async () => {
      throw new Error('boom');
    },
    () => 'done',
  );
} catch (err) {
  failed = err;
}
check(failed?.message === 'boom', 'withProgress passes the error on');
check(fitFields(['a', 'loss 2.3'], 5) === 'a', 'fitFields drops whole fields');
check(formatDuration(65_000) === '1m05s', 'formatDuration');
console.log('SMOKE OK');
