import type { SoupConfig } from '@soup/config';

/**
 * How many steps apart a run's checkpoints are pushed: the flag, else `hub.push_every_steps`, else a quarter of the
 * horizon (at least 1).
 */
export function pushEveryOf(config: SoupConfig, flag?: number): number {
  return flag ?? config.hub.pushEverySteps ?? Math.max(1, Math.floor(config.training.steps / 4));
}
