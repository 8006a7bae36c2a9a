import { describe, expect, it } from 'vitest';
import { makeContext } from './_context';
import { showLossPlot } from './_show-plot';
import { lossPlotSvg, renderLossPlot, type LossPoint } from './loss-plot';

const history: LossPoint[] = [
  ...Array.from({ length: 50 }, (_, i) => ({ step: i + 1, loss: 5.5 * Math.exp(-i / 15) + 2, learning_rate: 1e-3 })),
  { step: 50, eval_loss: 2.4 },
];

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { chunks, stream: { write: (s: string) => void chunks.push(s), isTTY, columns: 80 } };
}

describe('renderLossPlot', () => {
  it('draws a compact Unicode plot: braille curve, y range on the axis, eval loss marked, within the width', () => {
    const lines = renderLossPlot({ history, columns: 80, rows: 6 });
    expect(lines).toHaveLength(6 + 3);
    expect(lines[0]).toMatch(/^7\.50 ┤/);
    expect(lines[5]).toMatch(/^2\.\d\d ┤/);
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(80);
    const plot = lines.slice(0, 6).join('\n');
    expect(plot).toMatch(/[\u2801-\u28ff]/);
    expect(plot).toContain('◆');
    // the curve falls: its first dots are on the top row, its last on the bottom rows
    expect(lines[0]!.slice(6, 9)).toMatch(/[\u2801-\u28ff]/);
    expect(lines[0]!.slice(-10)).toMatch(/^\u2800+$/);
    expect(lines.at(-1)).toBe('      loss 7.50 → 2.21  ◆ eval_loss 2.4000');
  });

  it('plain text: about ten evenly spaced points and the eval loss, no braille, no ANSI', () => {
    const lines = renderLossPlot({ history, unicode: false });
    expect(lines[0]).toBe('loss curve (50 points, steps 1..50): 7.50 → 2.21, min 2.21');
    expect(lines.filter((l) => /^ {2}step +\d+ {2}loss /.test(l))).toHaveLength(10);
    expect(lines.at(-1)).toBe('  step 50  eval_loss 2.4000');
    expect(lines.join('\n')).not.toMatch(/[\u2800-\u28ff]|\x1b/);
    expect(renderLossPlot({ history: [{ step: 3, eval_loss: 1 }] })).toEqual([]);
  });

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
      expect(/[\u2801-\u28ff]/.test(out.chunks.join('')), JSON.stringify({ tty, env })).toBe(unicode);
    }
  });

  it('lossPlotSvg: a standalone SVG with one polyline vertex per logged step and the eval point', () => {
    const svg = lossPlotSvg({ history, title: 'a <run> & more' });
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="640" height="320"/);
    expect(svg).toContain('a &lt;run&gt; &amp; more');
    expect(/points="([^"]+)"/.exec(svg)![1]!.split(' ')).toHaveLength(50);
    expect(svg.match(/<circle /g)).toHaveLength(1);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });
});
