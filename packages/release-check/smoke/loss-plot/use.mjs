// Installed alone: a loss curve as text and as an SVG file written in a temp dir, and a refused PNG.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePng, lossHistoryOf, PngUnsupportedError, renderLossPlot, writeLossPlotSvg } from '@soup/loss-plot';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const { history, horizon } = lossHistoryOf({
  max_steps: 20,
  log_history: Array.from({ length: 20 }, (_, i) => ({ step: i + 1, loss: 4 - i / 10 })),
});
check(history.length === 20 && horizon === 20, 'lossHistoryOf');
const lines = renderLossPlot({ history, unicode: false });
check(lines[0] === 'loss curve (20 points, steps 1..20): 4.00 → 2.10, min 2.10', `plain: ${lines[0]}`);
const dir = mkdtempSync(join(tmpdir(), 'soup-smoke-'));
try {
  const file = writeLossPlotSvg({ path: 'plots/loss.svg', cwd: dir, history, horizon });
  check(readFileSync(file, 'utf8').startsWith('<svg xmlns="http://www.w3.org/2000/svg"'), 'svg written');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
let refused = null;
try {
  decodePng(new Uint8Array(16));
} catch (err) {
  refused = err;
}
check(refused instanceof PngUnsupportedError && refused.code === 'SOUP_LOSS_PLOT_PNG_UNSUPPORTED', 'decodePng');
console.log('SMOKE OK');
