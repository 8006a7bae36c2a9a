// Before a session takes the store's lease: is the lease free, its holder gone, or may this session wait
// for it? Waiting reads the lease file (no commits) until it expires; a renewal seen meanwhile proves
// its holder alive, and the session is refused rather than wait on a live writer for ever.
import { LeaseHeldError } from './errors';
import { timeLeft } from './_error-text';
import { type HolderIdentity, judgeHolder } from './_lease-identity';
import type { CheckpointStore, HubCkptLogger } from './types';

/** The lease file at the root of a checkpoint repo. */
export const LEASE_PATH = 'soup-lease.json';

/** What `soup-lease.json` holds (`boot_id`, `pidns` and `start` are absent in an older soup's lease). */
export interface LeaseInfo {
  format: 'soup-lease/1';
  /** Random id of this lease (one per session); `--take-over-lease` names it. */
  id: string;
  /** Run fingerprint of the holder. */
  run: string;
  host: string;
  /** The holder host's boot id (/proc/sys/kernel/random/boot_id), or null off Linux. */
  boot_id?: string | null;
  /** The holder's pid namespace (`readlink /proc/self/ns/pid`), or null off Linux. */
  pidns?: string | null;
  pid: number;
  /** The holder process's start time (field 22 of /proc/<pid>/stat), or null off Linux. */
  start?: string | null;
  /** ISO time the lease was taken. */
  since: string;
  /** ISO time of the last renewal. */
  renewed_at: string;
  /** ISO time after which another writer may take the lease. */
  expires_at: string;
}

/** The lease file's record, or null when absent or not a lease. */
export function parseLease(raw: Uint8Array | null): LeaseInfo | null {
  if (raw === null) return null;
  try {
    const v = JSON.parse(new TextDecoder().decode(raw)) as Partial<LeaseInfo>;
    if (v.format !== 'soup-lease/1' || typeof v.id !== 'string' || typeof v.expires_at !== 'string') return null;
    return v as LeaseInfo;
  } catch {
    return null;
  }
}

/** How often a waiting session re-reads the lease (and prints its countdown). */
const WAIT_POLL_MS = 10_000;

export interface LeaseToReplaceOptions {
  store: CheckpointStore;
  here: HolderIdentity;
  now: () => number;
  /** Wait for a live-looking lease of another host to expire (instead of refusing at once). */
  wait: boolean;
  /** The id of a lease to take over at once, whoever holds it. */
  takeOver: string | null;
  logger?: HubCkptLogger | undefined;
}

/**
 * Reads the lease until this session may replace it and returns the bytes it replaces (null: no lease),
 * the base of the compare-and-swap write. Throws LeaseHeldError when it may not.
 */
export async function leaseToReplace(p: LeaseToReplaceOptions): Promise<Uint8Array | null> {
  const { store, now } = p;
  const warn = (line: string): void => p.logger?.warn?.(`${store.description}: ${line}`);
  let first: LeaseInfo | null = null;
  for (;;) {
    const raw = await store.readFile({ path: LEASE_PATH });
    const held = parseLease(raw);
    if (held === null) return raw;
    const leftMs = Date.parse(held.expires_at) - now();
    const who = `lease ${held.id} of host ${held.host}, pid ${held.pid}, run "${held.run}", since ${held.since}`;
    if (p.takeOver !== null && held.id === p.takeOver) {
      warn(
        `taking over ${who} (${leftMs > 0 ? `expires in ${timeLeft(leftMs)}` : 'expired'}), as asked: if that ` +
          'session still runs, it stops writing at its next renewal',
      );
      return raw;
    }
    if (!(leftMs > 0)) return raw;
    const verdict = judgeHolder(held, p.here);
    if (verdict.kind === 'gone') {
      warn(`taking over ${who}: ${verdict.why}`);
      return raw;
    }
    const refuse = (note: string): LeaseHeldError =>
      new LeaseHeldError({ where: store.description, holder: held, note, nowMs: now() });
    if (p.takeOver !== null) throw refuse(`--take-over-lease ${p.takeOver} names another lease than this one.`);
    if (verdict.kind === 'alive') throw refuse(`Its holder is alive on this host (${verdict.why}).`);
    if (first !== null && (held.id !== first.id || held.renewed_at !== first.renewed_at))
      throw refuse('It was renewed while this session waited: its holder is alive.');
    if (!p.wait) throw refuse(`Nothing here can tell whether it is alive: ${verdict.why}.`);
    first ??= held;
    p.logger?.info?.(
      `${store.description}: lease held by host ${held.host} (pid ${held.pid}, run "${held.run}"), expires in ` +
        `${timeLeft(leftMs)}; waiting (${verdict.why}; --take-over-lease ${held.id} if you know it is dead)`,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.min(leftMs + 50, WAIT_POLL_MS)));
  }
}
