// soup train's session end: --time-limit or training.time_limit. The session end itself (signals, the limit
// counted from soup's start, the step saved) is the supervisor's, as for any trainer.
import { UsageError } from './errors';
import { parseDuration } from '@soup/config';

/**
 * The time limit of this session in ms, from `--time-limit` (wins) or `training.time_limit`; null for none.
 * A flag that is not a duration is a UsageError naming the flag and the accepted forms.
 */
export function resolveTimeLimitMs(flag: unknown, configMs: number | null): number | null {
  if (flag === undefined || flag === null) return configMs;
  const ms = parseDuration(String(flag));
  if (ms === undefined) {
    throw new UsageError(
      `--time-limit ${JSON.stringify(String(flag))} is not a duration: use e.g. 8h45m, 90m, 45s, or a number of ` +
        `seconds`,
    );
  }
  return ms;
}
