// soup ckpt's human lines: @soup/hub-ckpt words them; here they get soup's colours and units, and tables are drawn.
import type { DescribedLine, DescribeStyle } from '@soup/hub-ckpt';
import { formatDuration } from '@soup/progress';
import { relative } from 'node:path';
import type { CommandContext } from './_context';
import { renderTable } from './_table';
import { formatBytes } from './format-bytes';

/** soup's colours, sizes and durations, and local paths relative to the working directory. */
export const lineStyle = (ctx: CommandContext): DescribeStyle => ({
  ...ctx.style,
  bytes: formatBytes,
  duration: formatDuration,
  path: (p) => relative(ctx.cwd, p) || p,
});

/** Says each line; a table is drawn as columns, indented under the line before it. */
export function sayLines(ctx: CommandContext, lines: readonly DescribedLine[]): void {
  for (const l of lines) ctx.say(typeof l === 'string' ? l : renderTable(l.table, ctx.style.bold).replace(/^/gm, '  '));
}
