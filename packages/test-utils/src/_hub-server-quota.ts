// The Hub's hourly commit quota on the local Hub-protocol test server: a sliding hour of answered commits per
// repo, refused with the reply the Hub sends (429, its text, Retry-After and a RateLimit header).
import type { ServerResponse } from 'node:http';
import type { HubServerContext } from './_hub-server-context';
import { sendError } from './_hub-server-http';

/** The text the Hub answers a commit over its hourly quota with. */
export const COMMIT_QUOTA_MESSAGE =
  'You have exceeded our hourly quotas for action: commit. We invite you to retry later.';

const HOUR_MS = 3_600_000;

/** Answers 429 and returns true when the repo `key` is over its hourly commit quota now. */
export function refuseOverQuota(ctx: HubServerContext, res: ServerResponse, key: string): boolean {
  const quota = ctx.faults.commitQuota;
  if (!quota) return false;
  const now = ctx.now();
  const times = (ctx.commitTimes.get(key) ?? []).filter((t) => t > now - HOUR_MS);
  if (times.length < quota.perHour) return false;
  const oldest = times[0] ?? now;
  const waitS =
    quota.retryAfterS === undefined ? Math.max(1, Math.ceil((oldest + HOUR_MS - now) / 1000)) : quota.retryAfterS;
  const headers: Record<string, string> =
    waitS === null ? {} : { 'Retry-After': String(waitS), RateLimit: `"commits";r=0;t=${waitS}` };
  sendError(res, 429, COMMIT_QUOTA_MESSAGE, undefined, headers);
  return true;
}

/** Records one answered commit of repo `key` at the server's now. */
export function countCommit(ctx: HubServerContext, key: string): void {
  ctx.commitTimes.set(key, [...(ctx.commitTimes.get(key) ?? []), ctx.now()]);
}
