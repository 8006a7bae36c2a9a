// The checks and failure mapping of HubStore: options refused before any call, Hub answers turned into errors.
import { HubApiError } from '@huggingface/hub';
import {
  CommitQuotaError,
  ConcurrentWriteError,
  HubAuthError,
  InvalidCheckpointOptionError,
  StoreError,
} from './errors';
import { redact } from './_redact';

const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** Refuses a repo id, repo type or endpoint a HubStore cannot use; returns the repo type and parsed endpoint. */
export function checkHubStoreOptions(
  opts: { repo: string; repoType?: 'model' | 'dataset'; endpoint?: string },
  env: NodeJS.ProcessEnv,
): { repoType: 'model' | 'dataset'; endpoint: URL } {
  if (typeof opts.repo !== 'string' || !REPO_ID.test(opts.repo)) {
    throw new InvalidCheckpointOptionError(
      `repo ${JSON.stringify(opts.repo)} is not a Hub repo id: use "namespace/name" (or "file:///path" for a ` +
        `directory store via openStore).`,
      { field: 'repo' },
    );
  }
  const repoType = opts.repoType ?? 'model';
  if (repoType !== 'model' && repoType !== 'dataset') {
    throw new InvalidCheckpointOptionError(`repoType must be "model" or "dataset", got ${JSON.stringify(repoType)}.`, {
      field: 'repoType',
    });
  }
  const endpointRaw = opts.endpoint ?? env.HF_ENDPOINT ?? 'https://huggingface.co';
  let endpoint: URL;
  try {
    endpoint = new URL(endpointRaw);
  } catch (err) {
    throw new InvalidCheckpointOptionError('endpoint must be an http(s) URL such as https://huggingface.co.', {
      field: 'endpoint',
      cause: err,
    });
  }
  if (endpoint.protocol !== 'https:' && endpoint.protocol !== 'http:') {
    throw new InvalidCheckpointOptionError(
      `endpoint ${JSON.stringify(endpoint.protocol)} is not http(s): use an https:// URL such as ` +
        `https://huggingface.co.`,
      { field: 'endpoint' },
    );
  }
  return { repoType, endpoint };
}

/**
 * Rethrows a failed Hub call of `what` as this package's error: HubAuthError for 401/403 or a malformed token,
 * StoreError for any other failure, with the token redacted; its own errors and aborts go through unchanged.
 */
export function hubFailure(
  what: string,
  err: unknown,
  h: { description: string; repoId: string; token: string | undefined },
): never {
  if (
    err instanceof HubAuthError ||
    err instanceof StoreError ||
    err instanceof InvalidCheckpointOptionError ||
    err instanceof ConcurrentWriteError ||
    err instanceof CommitQuotaError
  )
    throw err;
  if ((err as Error | undefined)?.name === 'AbortError' || (err as Error | undefined)?.name === 'TimeoutError')
    throw err;
  const secrets = [h.token];
  if (err instanceof HubApiError) {
    const status = err.statusCode;
    const detail = redact(err.message, secrets);
    if (status === 401 || status === 403) {
      const hint =
        status === 401
          ? h.token === undefined
            ? 'No token was given: set HF_TOKEN (or pass token) to a token with write access.'
            : 'The token is invalid, expired, or cannot see this repo: set HF_TOKEN to a valid token with write ' +
              'access.'
          : `The token is valid but lacks permission: use a token with write access to ${h.repoId}.`;
      throw new HubAuthError(
        redact(`${what} on ${h.description}: the Hub answered ${status}. ${hint} (${detail})`, secrets),
        {
          status,
          url: redact(err.url, secrets),
          requestId: err.requestId,
          cause: err,
        },
      );
    }
    throw new StoreError(redact(`${what} on ${h.description} failed with HTTP ${status}: ${detail}`, secrets), {
      status,
      url: redact(err.url, secrets),
      requestId: err.requestId,
      cause: err,
    });
  }
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e instanceof TypeError && /start with 'hf_'/.test(e.message)) {
    throw new HubAuthError(
      `${what} on ${h.description}: the token does not look like a Hugging Face token (they start with "hf_").`,
      {
        status: 0,
        cause: err,
      },
    );
  }
  const reason = e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
  throw new StoreError(redact(`${what} on ${h.description} failed: ${e.message ?? String(err)} (${reason})`, secrets), {
    cause: err,
  });
}
