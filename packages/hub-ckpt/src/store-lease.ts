import { randomBytes } from 'node:crypto';
import {
  CommitQuotaError,
  ConcurrentWriteError,
  InvalidCheckpointOptionError,
  LeaseHeldError,
  LeaseLostError,
} from './errors';
import { sha256Hex } from './_fs';
import { identityHere } from './_lease-identity';
import { LEASE_PATH, type LeaseInfo, leaseToReplace, parseLease } from './_lease-wait';
import { type Clock, systemClock } from './clock';
import type { CheckpointStore, HubCkptLogger, IfMatch, StoreOperation } from './types';

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
  /**
   * Renew automatically until released. A directory store renews every `ttlMs / 3` (a renewal there is free);
   * on the Hub every renewal is a commit, so renewals ride on the push's pointer commit (see `rideAlong`) and a
   * renewal-only commit happens only once `ttlMs / 2` passed without one. @default true
   */
  autoRenew?: boolean;
  /** @default silent */
  logger?: HubCkptLogger;
  /** @default clock.now */
  now?: () => number;
  /** The renewal timers' clock (and `now`'s, when no `now` is given). @default the system clock */
  clock?: Clock;
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
  /** When the lease file was last written (ms since the epoch, by the lease's clock). */
  readonly renewedAtMs: number;
  /**
   * A renewal to write in the caller's own commit (on the Hub, where each commit counts against an hourly
   * quota): the put and the compare-and-swap condition to add to it, and `landed()` to call once that commit
   * landed. null on a directory store (renewals are free there) and once the lease is lost or released.
   */
  rideAlong(): LeaseRide | null;
  /** Stops renewing and deletes the lease file (only if it is still this one). */
  release(): Promise<void>;
}

/** A lease renewal riding on another commit (see StoreLease.rideAlong). */
export interface LeaseRide {
  operation: StoreOperation;
  ifMatch: IfMatch;
  /** Call once the commit carrying it ended: `true` when it landed (the renewal is recorded), `false` when not. */
  settle(landed: boolean): void;
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
  // Over 150 lines: the lease's state (its sha, rides in flight, a quota wait) is shared by its methods and timer.
  const { store } = opts;
  const ttlMs = opts.ttlMs ?? defaultLeaseTtlMs(store);
  if (!Number.isFinite(ttlMs) || ttlMs < 1000) {
    throw new InvalidCheckpointOptionError(`the lease TTL must be at least 1 s, got ${JSON.stringify(ttlMs)} ms.`, {
      field: 'ttlMs',
    });
  }
  const clock = opts.clock ?? systemClock;
  const now = opts.now ?? (() => clock.now());
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
  let renewedAtMs = now();
  // Set while the Hub refuses commits for its quota: no renewal-only commit is tried before then.
  let quotaUntilMs = 0;
  const renewal = (): LeaseInfo => {
    const t2 = now();
    return { ...info, renewed_at: new Date(t2).toISOString(), expires_at: new Date(t2 + ttlMs).toISOString() };
  };
  const write = async (next: LeaseInfo): Promise<void> => {
    const bytes = leaseBytes(next);
    await store.commit({
      message: `soup: lease ${next.id} (${next.host} pid ${next.pid}) until ${next.expires_at}`,
      operations: [{ kind: 'put', path: LEASE_PATH, bytes }],
      ifMatch: { path: LEASE_PATH, sha256: sha },
    });
    sha = sha256Hex(bytes);
    info = next;
    renewedAtMs = Date.parse(next.renewed_at);
    quotaUntilMs = 0;
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
  let timer: unknown;
  let renewing: Promise<void> | null = null;
  // Renewals riding on a commit in flight: a timer renewal meanwhile would race it on the lease file.
  let ridesPending = 0;
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
    get renewedAtMs() {
      return renewedAtMs;
    },
    rideAlong(): LeaseRide | null {
      // A renewal already on its way would race this one on the same compare-and-swap: let it go alone.
      if (lost || released || store.kind !== 'hub' || renewing !== null) return null;
      const next = renewal();
      const bytes = leaseBytes(next);
      ridesPending++;
      let settled = false;
      return {
        operation: { kind: 'put', path: LEASE_PATH, bytes },
        ifMatch: { path: LEASE_PATH, sha256: sha },
        settle: (landed) => {
          if (settled) return;
          settled = true;
          ridesPending--;
          if (!landed) return;
          sha = sha256Hex(bytes);
          info = next;
          renewedAtMs = Date.parse(next.renewed_at);
          quotaUntilMs = 0;
        },
      };
    },
    async renew(): Promise<void> {
      if (lost || released) return;
      try {
        await write(renewal());
      } catch (err) {
        if (err instanceof ConcurrentWriteError) {
          lost = true;
          opts.logger?.warn?.(
            `${store.description}: the lease was taken by another writer; this session stops writing`,
          );
          return;
        }
        if (err instanceof CommitQuotaError) {
          // Said once per refusal spell, not at every tick: the renewal waits as long as the Hub asks.
          if (quotaUntilMs === 0)
            opts.logger?.warn?.(
              `${store.description}: the Hub's commit quota holds the lease's renewal back; it expires at ` +
                `${info.expires_at} unless a push or a renewal lands first`,
            );
          quotaUntilMs = now() + (err.retryAfterMs ?? ttlMs / 6);
          return;
        }
        opts.logger?.warn?.(
          `${store.description}: renewing the lease failed (${(err as Error).message}); retrying at the next renewal`,
        );
      }
    },
    async release(): Promise<void> {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
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
    // The Hub looks often and renews only what no push renewed for TTL/2; a directory renews every TTL/3.
    const hub = store.kind === 'hub';
    const tickMs = Math.max(500, Math.floor(ttlMs / (hub ? 6 : 3)));
    const tick = (): void => {
      if (released || lost) return;
      if (ridesPending === 0 && now() >= quotaUntilMs && (!hub || now() - renewedAtMs >= ttlMs / 2)) {
        renewing ??= lease.renew().finally(() => {
          renewing = null;
        });
      }
      timer = clock.setTimeout(tick, tickMs);
    };
    timer = clock.setTimeout(tick, tickMs);
  }
  return lease;
}
