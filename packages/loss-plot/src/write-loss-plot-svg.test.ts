import { useTempDir } from '@soup/test-utils';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lossPlotSvg } from './loss-plot';
import { writeLossPlotSvg } from './write-loss-plot-svg';

const history = [
  { step: 1, loss: 3 },
  { step: 2, loss: 2.5 },
  { step: 2, eval_loss: 2.7 },
];

describe('writeLossPlotSvg', () => {
  it('writes lossPlotSvg into missing folders, relative to cwd, and leaves no temporary file', () => {
    const dir = useTempDir('soup-plot-write-');
    const path = writeLossPlotSvg({ path: 'plots/deep/loss.svg', cwd: dir, history, horizon: 10, title: 't' });
    expect(path).toBe(join(dir, 'plots', 'deep', 'loss.svg'));
    expect(readFileSync(path, 'utf8')).toBe(lossPlotSvg({ history, horizon: 10, title: 't' }));
    expect(readdirSync(join(dir, 'plots', 'deep'))).toEqual(['loss.svg']);
  });

  it('replaces a previous plot whole', () => {
    const dir = useTempDir('soup-plot-write-');
    const file = join(dir, 'loss.svg');
    writeLossPlotSvg({ path: file, history: [{ step: 1, loss: 9 }] });
    writeLossPlotSvg({ path: file, history });
    expect(readFileSync(file, 'utf8')).toBe(lossPlotSvg({ history }));
  });
});
