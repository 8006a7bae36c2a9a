// Writes the SVG of a loss curve to a file, whole or not at all.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { lossPlotSvg, type LossPlotSvgOptions } from './loss-plot';

/** Options of {@link writeLossPlotSvg}: those of `lossPlotSvg`, and where to write. */
export interface WriteLossPlotSvgOptions extends LossPlotSvgOptions {
  /** The SVG file; a relative path is resolved against `cwd`. Missing folders are created. */
  path: string;
  /** @default process.cwd() */
  cwd?: string;
}

/**
 * Writes {@link lossPlotSvg}'s document to `path` through a temporary sibling renamed into place, so a reader
 * (a browser refreshing the file) never sees half a plot. Returns the absolute path written.
 */
export function writeLossPlotSvg(opts: WriteLossPlotSvgOptions): string {
  const { path: given, cwd, ...svg } = opts;
  const path = resolve(cwd ?? process.cwd(), given);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, lossPlotSvg(svg));
  renameSync(tmp, path);
  return path;
}
