import { runProcess, useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodePng } from './decode-png';
import { lossPlotSvg, niceTicks, renderLossPlot, type LossPoint } from './loss-plot';

const history: LossPoint[] = [
  ...Array.from({ length: 50 }, (_, i) => ({ step: i + 1, loss: 5.5 * Math.exp(-i / 15) + 2, learning_rate: 1e-3 })),
  { step: 50, eval_loss: 2.4 },
];

// A real run's shape: a noisy falling curve with one early spike (3.45 → 8.26 at step 16), 300 steps
// (more steps than dot columns, so several points share a column), an eval loss below every train loss.
const noise = (i: number): number => 0.04 * Math.sin(i * 1.7) + 0.03 * Math.cos(i * 0.61);
const spiky: LossPoint[] = [
  ...Array.from({ length: 300 }, (_, i) => ({
    step: i + 1,
    loss: i + 1 === 16 ? 8.26 : 3.2 * Math.exp(-i / 60) + 1.7 + noise(i),
  })),
  { step: 300, eval_loss: 1.2 },
];

const BRAILLE = /[\u2801-\u28ff]/;

describe('renderLossPlot', () => {
  it('draws a compact Unicode plot: braille curve, y range on the axis, eval loss marked, within the width', () => {
    const lines = renderLossPlot({ history, columns: 80, rows: 6 });
    expect(lines).toHaveLength(6 + 3);
    expect(lines[0]).toMatch(/^7\.50 ┤/);
    expect(lines[5]).toMatch(/^2\.\d\d ┤/);
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(80);
    const plot = lines.slice(0, 6).join('\n');
    expect(plot).toMatch(BRAILLE);
    expect(plot).toContain('◆');
    // the curve falls: its first dots are on the top row, its last on the bottom rows
    expect(lines[0]!.slice(6, 9)).toMatch(BRAILLE);
    expect(lines[0]!.slice(-10)).toMatch(/^\u2800+$/);
    expect(lines.at(-1)).toBe('      loss 7.50 → 2.21  ◆ eval_loss 2.4000');
  });

  it('a spike is drawn at the top row under its label: columns and y range come from the same values', () => {
    const rows = 8;
    const lines = renderLossPlot({ history: spiky, columns: 80, rows });
    expect(lines[0]).toMatch(/^8\.26 ┤/);
    // The spike's column (step 16 of 300: near the left) has ink on the top row, and on the row just
    // under the top only where the stroke comes down again; nothing else reaches the top quarter.
    const top = lines[0]!.slice(lines[0]!.indexOf('┤') + 1);
    const inked = [...top].map((c, i) => (c !== '\u2800' ? i : -1)).filter((i) => i >= 0);
    expect(inked.length, lines.join('\n')).toBeGreaterThan(0);
    expect(Math.max(...inked)).toBeLessThan(8); // step 16 of 300 in ~72 columns: column ~3
    // The rest of the curve (about 1.6 .. 4.9) sits below the spike: the top row holds only the spike.
    expect(lines[rows - 1]).toMatch(/^1\.20 ┤/);
  });

  it("plain text: about ten evenly spaced points and the eval loss; the summary min is the training loss's", () => {
    const lines = renderLossPlot({ history, unicode: false });
    expect(lines[0]).toBe('loss curve (50 points, steps 1..50): 7.50 → 2.21, min 2.21');
    expect(lines.filter((l) => /^ {2}step +\d+ {2}loss /.test(l))).toHaveLength(10);
    expect(lines.at(-1)).toBe('  step 50  eval_loss 2.4000');
    expect(lines.join('\n')).not.toMatch(/[\u2800-\u28ff]|\x1b/);
    expect(renderLossPlot({ history: [{ step: 3, eval_loss: 1 }] })).toEqual([]);
    // eval_loss 1.2 is below every training loss: it is not the training curve's min
    expect(renderLossPlot({ history: spiky, unicode: false })[0]).toMatch(
      /^loss curve \(300 points, steps 1\.\.300\): 4\.9\d → [\d.]+, min 1\.\d\d$/,
    );
    expect(renderLossPlot({ history: spiky, unicode: false })[0]).not.toContain('min 1.20');
  });

  it('one point: singular words', () => {
    expect(renderLossPlot({ history: [{ step: 1, loss: 5.5 }], unicode: false })[0]).toBe(
      'loss curve (1 point, step 1): 5.50 → 5.50, min 5.50',
    );
  });
});

/** Tick labels of one axis, as numbers. */
const ticks = (svg: string, axis: 'x' | 'y'): number[] =>
  [...svg.matchAll(new RegExp(`<text class="tick-${axis}"[^>]*>([^<]+)</text>`, 'g'))].map((m) => Number(m[1]));

/** True when every gap between ticks is the same 1, 2 or 5 × 10^k and every tick is a multiple of it. */
function isNice(values: number[]): boolean {
  if (values.length < 2) return false;
  const step = values[1]! - values[0]!;
  const mantissa = step / 10 ** Math.floor(Math.log10(step));
  if (![1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-9)) return false;
  return values.every(
    (v, i) => Math.abs(v - values[0]! - i * step) < step * 1e-6 && Math.abs(v / step - Math.round(v / step)) < 1e-6,
  );
}

/** The polyline's vertices, in SVG units. */
const vertices = (svg: string): [number, number][] =>
  (/<polyline[^>]* points="([^"]+)"/.exec(svg)?.[1] ?? '')
    .split(' ')
    .map((p) => p.split(',').map(Number) as [number, number]);

describe('lossPlotSvg', () => {
  it('a standalone SVG with one polyline vertex per logged step and the eval point', () => {
    const svg = lossPlotSvg({ history, title: 'a <run> & more' });
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="640" height="320"/);
    expect(svg).toContain('a &lt;run&gt; &amp; more');
    expect(vertices(svg)).toHaveLength(50);
    expect(svg.match(/<circle /g)).toHaveLength(1);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  it('nice 1-2-5 ticks on both axes, and axis labels', () => {
    for (const h of [history, spiky]) {
      const svg = lossPlotSvg({ history: h, horizon: h === spiky ? 300 : 50 });
      expect(isNice(ticks(svg, 'y')), ticks(svg, 'y').join(' ')).toBe(true);
      expect(isNice(ticks(svg, 'x')), ticks(svg, 'x').join(' ')).toBe(true);
      expect(svg).toMatch(/<text class="axis-label"[^>]*>step<\/text>/);
      expect(svg).toMatch(/<text class="axis-label"[^>]*>loss<\/text>/);
    }
    expect(ticks(lossPlotSvg({ history: spiky, horizon: 300 }), 'x')).toEqual([50, 100, 150, 200, 250, 300]);
    expect(niceTicks(1.18, 7.4).ticks).toEqual([0, 2, 4, 6, 8]);
    expect(niceTicks(1.18, 3.04).ticks).toEqual([1, 1.5, 2, 2.5, 3, 3.5]);
  });

  it(
    'an early spike is clipped and marked, not allowed to squeeze the curve: the rest spans most of the ' +
      'plot height',
    () => {
      const svg = lossPlotSvg({ history: spiky, horizon: 300 });
      expect(svg).toContain('▲ 1 spike above the scale, clipped (highest 8.26 at step 16)');
      expect(svg.match(/class="clipped"/g)).toHaveLength(1);
      const ys = vertices(svg)
        .filter((_, i) => i !== 15)
        .map(([, y]) => y);
      const plotHeight = 320 - 40 - 48;
      expect((Math.max(...ys) - Math.min(...ys)) / plotHeight).toBeGreaterThan(0.6);
      expect(Math.max(...ticks(svg, 'y'))).toBeLessThan(8.26);
      // A smooth curve has nothing to clip.
      expect(lossPlotSvg({ history })).not.toContain('class="clipped"');
    },
  );
});

const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';
const chromiumMissing = existsSync(chromium) ? null : `${chromium} is not installed (Debian: apt-get install chromium)`;
if (chromiumMissing) console.log(`loss-plot.test.ts: skipping the Chromium render check: ${chromiumMissing}`);

describe('[slow] lossPlotSvg in headless Chromium', { timeout: 120_000 }, () => {
  it.skipIf(chromiumMissing !== null)(
    'renders with nice tick labels, and the curve spans most of the plot height despite the spike',
    async () => {
      const dir = useTempDir('soup-plot-');
      const svg = lossPlotSvg({ history: spiky, horizon: 300 });
      const file = join(dir, 'loss.svg');
      writeFileSync(file, svg);
      const png = join(dir, 'shot.png');
      const profile = useTempDir('soup-chromium-');
      const r = await runProcess(
        chromium,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${profile}`,
          '--hide-scrollbars',
          '--window-size=640,320',
          `--screenshot=${png}`,
          `file://${file}`,
        ],
        { timeoutMs: 90_000 },
      );
      expect(existsSync(png), r.stderr.slice(-2000)).toBe(true);
      const img = decodePng(readFileSync(png));
      expect([img.width, img.height]).toEqual([640, 320]);
      // Rows holding the loss line's blue (#1f6feb), inside the plot area (x past the y axis), leaving out
      // the few pixels around the spike (steps 13..19: x 76..100 in this layout and the old one): the rest
      // of the curve must fill most of the height.
      const plotTop = 40;
      const plotBottom = 320 - 48;
      const rows: number[] = [];
      for (let y = plotTop - 2; y <= plotBottom + 2; y++) {
        for (let x = 70; x < img.width - 16; x++) {
          if (x >= 76 && x <= 100) continue;
          const i = (y * img.width + x) * 4;
          const [red, green, blue] = [img.rgba[i]!, img.rgba[i + 1]!, img.rgba[i + 2]!];
          if (blue > 170 && red < 120 && green < 160) {
            rows.push(y);
            break;
          }
        }
      }
      const span = (Math.max(...rows) - Math.min(...rows)) / (plotBottom - plotTop);
      console.info(
        `loss plot in Chromium: the curve spans ${(span * 100).toFixed(0)} % of the plot height (rows ` +
          `${Math.min(...rows)}..${Math.max(...rows)})`,
      );
      expect(span).toBeGreaterThan(0.6);
      expect(ticks(svg, 'y')).toEqual([1, 2, 3, 4, 5]);
      // The y tick labels sit where the SVG put them: their grid lines are drawn (light grey rows).
      for (const v of ticks(svg, 'y')) {
        const y = Math.round(
          Number(
            new RegExp(`<line x1="60" y1="([\\d.]+)"[^>]*/>\\n<text class="tick-y"[^>]*>${v}</text>`).exec(svg)?.[1],
          ),
        );
        const i = (y * img.width + 300) * 4;
        const grey = img.rgba[i]!;
        expect(grey, `grid line of tick ${v} at y=${y}`).toBeLessThan(250);
      }
    },
  );
});
