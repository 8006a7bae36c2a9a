import { describe, expect, it } from 'vitest';
import { lossPlotStyle } from './loss-plot-style';

describe('lossPlotStyle', () => {
  it('Unicode on a TTY; plain text under NO_COLOR, TERM=dumb or a pipe', () => {
    const cases: [boolean, Record<string, string>, boolean][] = [
      [true, {}, true],
      [true, { NO_COLOR: '1' }, false],
      [true, { TERM: 'dumb' }, false],
      [false, {}, false],
    ];
    for (const [isTTY, env, unicode] of cases)
      expect(lossPlotStyle({ isTTY, env, columns: 100 }), JSON.stringify({ isTTY, env })).toEqual({
        unicode,
        columns: 100,
      });
  });

  it("the width is the terminal's when it has at least 20 columns, else 80", () => {
    expect(lossPlotStyle({}).columns).toBe(80);
    expect(lossPlotStyle({ columns: 19 }).columns).toBe(80);
    expect(lossPlotStyle({ columns: 20 }).columns).toBe(20);
    expect(lossPlotStyle({ isTTY: true }).unicode).toBe(true);
  });
});
