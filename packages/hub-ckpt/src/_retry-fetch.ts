import { CommitQuotaError } from './errors';
import { redact } from './_redact';
import type { HubCkptLogger } from './types';

/** Retry policy for Hub calls (429, 5xx other than 501, and network errors). */
export interface RetryOptions {
  /** Retries after the first attempt. @default 5 */
  retries?: number;
  /** First backoff delay; it doubles on each retry (±20 % jitter). @default 500 */
  baseDelayMs?: number;
  /** Longest single wait, a `Retry-After` included. @default 60000 */
  maxDelayMs?: number;
}

export interface RetryingFetchOptions extends RetryOptions {
  fetch: typeof fetch;
  logger?: HubCkptLogger;
  /** Strings never to log (the token). */
  secrets: ReadonlyArray<string | undefined>;
  /** Injectable for tests. @default setTimeout-based sleep */
  sleep?: (ms: number) => Promise<void>;
}

export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 408 || (status >= 500 && status !== 501 && status !== 505);
}

/** Milliseconds a `Retry-After` header asks for (seconds or an HTTP date), or null. */
export function parseRetryAfterMs(value: string | null, nowMs: number = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** Milliseconds the `RateLimit` header's `t=` asks for (the Hub's rate-limit reply), or null. */
export function parseRateLimitResetMs(value: string | null): number | null {
  const m = value === null ? null : /(?:^|;)\s*t=(\d+)/.exec(value);
  return m?.[1] === undefined ? null : Number(m[1]) * 1000;
}

/** Whether a 429 is the Hub's hourly commit quota: waiting seconds and retrying cannot help, the caller paces. */
async function commitQuotaOf(res: Response, method: string, url: string): Promise<CommitQuotaError | null> {
  if (res.status !== 429 || method !== 'POST' || !/\/commit\//.test(url)) return null;
  const text =
    res.headers.get('X-Error-Message') ??
    (await res
      .clone()
      .text()
      .catch(() => ''));
  if (!/quotas? for action: commit/i.test(text)) return null;
  await res.body?.cancel().catch(() => undefined);
  const retryAfterMs =
    parseRetryAfterMs(res.headers.get('Retry-After')) ?? parseRateLimitResetMs(res.headers.get('RateLimit'));
  const message = /"error"\s*:/.test(text) ? String((JSON.parse(text) as { error?: unknown }).error) : text;
  return new CommitQuotaError({ url, retryAfterMs, message });
}

function replayable(body: unknown): boolean {
  return !(typeof ReadableStream !== 'undefined' && body instanceof ReadableStream);
}

function describeUrl(input: Parameters<typeof fetch>[0]): string {
  const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  try {
    const u = new URL(raw);
    return `${u.origin}${u.pathname}`;
  } catch {
    return raw.split('?')[0] ?? raw;
  }
}

/** Wraps fetch with retries and backoff; the last failing response is returned as is for the caller to report. */
export function makeRetryingFetch(opts: RetryingFetchOptions): typeof fetch {
  const retries = opts.retries ?? 5;
  const base = opts.baseDelayMs ?? 500;
  const maxDelay = opts.maxDelayMs ?? 60_000;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const inner = opts.fetch;
  const log = (line: string): void => opts.logger?.warn?.(redact(line, opts.secrets));

  const wrapped = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
    const canRetry = replayable(init?.body);
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(maxDelay, base * 2 ** attempt * (0.8 + Math.random() * 0.4));
      let res: Response;
      try {
        res = await inner(input, init);
      } catch (err) {
        const name = (err as Error).name;
        if (name === 'AbortError' || init?.signal?.aborted || !canRetry || attempt >= retries) throw err;
        const reason = (err as { cause?: { code?: string; message?: string } }).cause?.code ?? (err as Error).message;
        log(
          `hub: ${method} ${describeUrl(input)} failed (${reason}); retry ${attempt + 1}/${retries} in ` +
            `${Math.round(backoff)} ms`,
        );
        await sleep(backoff);
        continue;
      }
      const quota = await commitQuotaOf(res, method, describeUrl(input));
      if (quota !== null) throw quota;
      if (!isRetryableStatus(res.status) || !canRetry || attempt >= retries) return res;
      const after = parseRetryAfterMs(res.headers.get('Retry-After'));
      const wait = Math.min(maxDelay, after ?? backoff);
      await res.body?.cancel().catch(() => undefined);
      log(
        `hub: ${method} ${describeUrl(input)} answered ${res.status}` +
          `${after === null ? '' : ` (Retry-After ${res.headers.get('Retry-After') ?? ''})`}; retry ${attempt + 1}` +
          `/${retries} in ${Math.round(wait)} ms`,
      );
      await sleep(wait);
    }
  };
  return wrapped as typeof fetch;
}
