import type { CommandContext } from '../_context';
import { planRows, planRun } from '@soup/plan';
import { prepareIo } from '../_prepare-lines';
import { renderTable } from '../_table';
import { EXIT_CODES } from '../exit-codes';
import { configWithOverrides, loadConfig } from '@soup/config';
import type { PlanOptions } from './plan.options';

/** `soup plan`: what `soup train` would do on this device, measured. */
export async function run(opts: PlanOptions, ctx: CommandContext): Promise<number> {
  const loaded = loadConfig({ path: opts.config, cwd: ctx.cwd });
  const file = loaded.displayPath;
  for (const w of loaded.warnings) ctx.warn(`${file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
  const { config, budgetFrom } = configWithOverrides(loaded.config, {
    device: opts.device,
    budgetBytes: opts.budget,
    cwd: ctx.cwd,
  });
  const plan = await planRun({
    ...prepareIo(ctx),
    config,
    file,
    noCache: opts.cache === false,
    predict: opts.predict !== false,
    budgetFrom,
  });
  const r = plan.report;
  ctx.emit(r);
  // The rows as an indented two-column table, without a header.
  const rows = planRows({ ...plan, config, cwd: ctx.cwd, style: ctx.style });
  ctx.say(
    renderTable([['', ''], ...rows])
      .split('\n')
      .slice(1)
      .map((l) => `  ${l}`)
      .join('\n'),
  );
  if (plan.prepared === null) {
    const n = r.problems.length;
    ctx.warn(
      `${r.config}: soup train would refuse this config (${n} problem${n === 1 ? '' : 's'}); nothing was probed`,
    );
    return EXIT_CODES.config;
  }
  return r.fits === false ? EXIT_CODES.noFit : EXIT_CODES.ok;
}
