// The flags that override a soup.yaml field, applied in one place: every command that reads the config and takes
// one of them gets the same rule, and the same answer to where the memory budget came from.
import { resolve } from 'node:path';
import type { DeviceSpec } from './parse-device';
import type { SoupConfig } from './soup-config';

/** The overrides a command line may give; each one given replaces its field. */
export interface ConfigOverrides {
  /** training.steps, the horizon (the schedule's too, unless training.schedule_steps says otherwise). */
  steps?: number | undefined;
  /**
   * A run continued to this horizon on its schedule: training.steps becomes it, and training.schedule_steps keeps
   * the run's (training.steps as loaded, unless set), so the fingerprint does not change.
   */
  extendTo?: number | undefined;
  /** output, resolved against `cwd`. */
  outputDir?: string | undefined;
  /** training.memory_budget, in bytes. */
  budgetBytes?: number | undefined;
  /** device. */
  device?: DeviceSpec | undefined;
  /** Base of a relative `outputDir`. */
  cwd: string;
}

/** The config with the overrides applied (a copy), and where its memory budget comes from (null: none). */
export function configWithOverrides(
  loaded: SoupConfig,
  o: ConfigOverrides,
): { config: SoupConfig; budgetFrom: 'flag' | 'config' | null } {
  const config = structuredClone(loaded);
  if (o.steps !== undefined) config.training.steps = o.steps;
  if (o.extendTo !== undefined) {
    config.training.scheduleSteps ??= config.training.steps;
    config.training.steps = o.extendTo;
  }
  if (o.outputDir !== undefined) config.output = resolve(o.cwd, o.outputDir);
  if (o.device !== undefined) config.device = o.device;
  const budgetFrom =
    o.budgetBytes !== undefined ? 'flag' : config.training.memoryBudgetBytes !== null ? 'config' : null;
  if (o.budgetBytes !== undefined) config.training.memoryBudgetBytes = o.budgetBytes;
  return { config, budgetFrom };
}
