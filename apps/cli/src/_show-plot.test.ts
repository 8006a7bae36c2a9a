import { describe, expect, it } from 'vitest';
import type { LossPoint } from '@soup/loss-plot';
import { makeContext } from './_context';
import { showLossPlot } from './_show-plot';

const history: LossPoint[] = [
  ...Array.from({ length: 50 }, (_, i) => ({ step: i + 1, loss: 5.5 * Math.exp(-i / 15) + 2, learning_rate: 1e-3 })),
  { step: 50, eval_loss: 2.4 },
];

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { chunks, stream: { write: (s: string) => void chunks.push(s), isTTY, columns: 80 } };
}

const BRAILLE = /[\u2801-\u28ff]/;

describe('showLossPlot', () => {
  it('showLossPlot: Unicode on a TTY; plain text under NO_COLOR, TERM=dumb or a pipe', () => {
    const cases: [boolean, NodeJS.ProcessEnv, boolean][] = [
      [true, {}, true],
      [true, { NO_COLOR: '1' }, false],
      [true, { TERM: 'dumb' }, false],
      [false, {}, false],
    ];
    for (const [tty, env, unicode] of cases) {
      const out = sink(tty);
      const ctx = makeContext({ stdout: out.stream, stderr: sink(false).stream, env, cwd: '/' }, false);
      showLossPlot(ctx, { history });
      expect(BRAILLE.test(out.chunks.join('')), JSON.stringify({ tty, env })).toBe(unicode);
    }
  });
});
