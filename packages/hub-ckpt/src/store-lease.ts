import { randomBytes } from 'node:crypto';
import { ConcurrentWriteError, InvalidCheckpointOptionError, LeaseHeldError, LeaseLostError } from './errors';
import { sha256Hex } from './_fs';
import { identityHere } from './_lease-identity';
import { LEASE_PATH, type LeaseInfo, leaseToReplace, parseLease } from './_lease-wait';
import type { CheckpointStore, HubCkptLogger } from './types';

export { LEASE_PATH, type LeaseInfo } from './_lease-wait';

/** The lease's default TTL: a preempted session's successor on another host waits at most this long. */
export const DEFAULT_LEASE_TTL_MS = 120_000;
/**
 * The Hub's default: every renewal there is a commit (a renewal every 40 s would be 90 commits an hour against
 * the Hub's hourly commit quota), so its lease lasts 10 min; a directory store renews for free.
 */
export const DEFAULT_HUB_LEASE_TTL_MS = 600_000;

/** The lease TTL a store gets when none is given: 2 min on a directory store, 10 min on the Hub. */
export function defaultLeaseTtlMs(store: Pick<CheckpointStore, 'kind'>): number {
  return store.kind === 'hub' ? DEFAULT_HUB_LEASE_TTL_MS : DEFAULT_LEASE_TTL_MS;
}

export interface AcquireLeaseOptions {
  store: CheckpointStore;
  /** Run fingerprint of this session. */
  run: string;
  /**
   * How long the lease lasts without renewal; renewed every third of it. A session killed with its VM
   * locks the store this long for a successor on another host. @default defaultLeaseTtlMs(store): 2 min on a
   * directory store, 10 min on the Hub
   */
  ttlMs?: number;
  /**
   * A live-looking lease of another host (or of an older soup, or another pid namespace) is waited for:
   * the lease file is re-read, a countdown logged (`logger.info`), and the lease taken once it expires
   * unrenewed; a renewal seen meanwhile throws LeaseHeldError. false throws at once. @default false
   */
  wait?: boolean;
  /** The id of the lease to take over at once (its holder is known dead); another lease id is refused. @default null */
  takeOver?: string | null;
  /** Renew automatically every `ttlMs / 3` until released. @default true */
  autoRenew?: boolean;
  /** @default silent */
  logger?: HubCkptLogger;
  /** @default Date.now */
  now?: () => number;
  /** @default os.hostname() */
  host?: string;
  /** @default process.pid */
  pid?: number;
}

/** A held lease: renew it while writing, release it at the end. */
export interface StoreLease {
  /** The lease as last written. */
  readonly info: LeaseInfo;
  /** Set once another writer took the store (a renewal found someone else's lease). */
  readonly lost: boolean;
  /** Throws LeaseLostError when the lease was lost (call before each write). */
  assertHeld(): void;
  /** Writes a new expiry (compare-and-swap on the lease file). */
  renew(): Promise<void>;
  /** Stops renewing and deletes the lease file (only if it is still this one). */
  release(): Promise<void>;
}

function leaseBytes(info: LeaseInfo): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(info, null, 2)}\n`);
}

/**
 * Takes the store's one-writer lease before the first write: `soup-lease.json`, written by a
 * compare-and-swap commit (the Hub: parentCommit plus a re-read at that head; a directory: the commit
 * lock, an exclusive create). A live lease of another session throws LeaseHeldError naming the holder
 * (lease id, host, pid, since, run), or with `wait` is waited for. An expired lease, one named by
 * `takeOver`, or one whose holder is gone on this same host (same boot id, hostname and pid namespace;
 * its pid dead or now another process) is taken over.
 */
export async function acquireLease(opts: AcquireLeaseOptions): Promise<StoreLease> {
  const { store } = opts;
  const ttlMs = opts.ttlMs ?? defaultLeaseTtlMs(store);
  if (!Number.isFinite(ttlMs) || ttlMs < 1000) {
    throw new InvalidCheckpointOptionError(`the lease TTL must be at least 1 s, got ${JSON.stringify(ttlMs)} ms.`, {
      field: 'ttlMs',
    });
  }
  const now = opts.now ?? Date.now;
  const here = identityHere({ ...(opts.host === undefined ? {} : { host: opts.host }), pid: opts.pid ?? process.pid });
  if (!(await store.exists())) await store.create();
  const raw = await leaseToReplace({
    store,
    here,
    now,
    wait: opts.wait ?? false,
    takeOver: opts.takeOver ?? null,
    logger: opts.logger,
  });
  const t = new Date(now()).toISOString();
  let info: LeaseInfo = {
    format: 'soup-lease/1',
    id: randomBytes(8).toString('hex'),
    run: opts.run,
    ...here,
    since: t,
    renewed_at: t,
    expires_at: new Date(now() + ttlMs).toISOString(),
  };
  let sha = raw === null ? null : sha256Hex(raw);
  const write = async (next: LeaseInfo): Promise<void> => {
    const bytes = leaseBytes(next);
    await store.commit({
      message: `soup: lease ${next.id} (${next.host} pid ${next.pid}) until ${next.expires_at}`,
      operations: [{ kind: 'put', path: LEASE_PATH, bytes }],
      ifMatch: { path: LEASE_PATH, sha256: sha },
    });
    sha = sha256Hex(bytes);
    info = next;
  };
  try {
    await write(info);
  } catch (err) {
    if (err instanceof ConcurrentWriteError) {
      const other = parseLease(await store.readFile({ path: LEASE_PATH }));
      if (other !== null) throw new LeaseHeldError({ where: store.description, holder: other, cause: err });
    }
    throw err;
  }
  let lost = false;
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> | null = null;
  const lease: StoreLease = {
    get info() {
      return info;
    },
    get lost() {
      return lost;
    },
    assertHeld(): void {
      if (lost) throw new LeaseLostError({ where: store.description, lease: info });
    },
    async renew(): Promise<void> {
      if (lost || released) return;
      try {
        const t2 = now();
        await write({
          ...info,
          renewed_at: new Date(t2).toISOString(),
          expires_at: new Date(t2 + ttlMs).toISOString(),
        });
      } catch (err) {
        if (err instanceof ConcurrentWriteError) {
          lost = true;
          opts.logger?.warn?.(
            `${store.description}: the lease was taken by another writer; this session stops writing`,
          );
          return;
        }
        opts.logger?.warn?.(
          `${store.description}: renewing the lease failed (${(err as Error).message}); retrying at the next renewal`,
        );
      }
    },
    async release(): Promise<void> {
      if (timer) clearInterval(timer);
      await renewing;
      if (released || lost) return;
      released = true;
      try {
        await store.commit({
          message: `soup: release lease ${info.id}`,
          operations: [{ kind: 'delete', path: LEASE_PATH }],
          ifMatch: { path: LEASE_PATH, sha256: sha },
        });
      } catch (err) {
        opts.logger?.warn?.(
          `${store.description}: could not release the lease (${(err as Error).message}); it expires at ` +
            `${info.expires_at}`,
        );
      }
    },
  };
  if (opts.autoRenew ?? true) {
    timer = setInterval(
      () => {
        renewing ??= lease.renew().finally(() => {
          renewing = null;
        });
      },
      Math.max(500, Math.floor(ttlMs / 3)),
    );
    timer.unref();
  }
  return lease;
}
