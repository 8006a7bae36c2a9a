// The fault switches of the local Hub-protocol test server: each makes it answer like a bad day on the
// real Hub.

/** Fault switches. Counted faults apply to the next `count` matching requests, then switch off. */
export interface HubServerFaults {
  /** Answer the next `count` commit POSTs with 429, with `Retry-After: retryAfterS` when set. */
  commit429?: { count: number; retryAfterS?: number };
  /** Answer the next `count` commit POSTs with 500. */
  commit500?: { count: number };
  /** Answer the next `count` LFS batch POSTs with 503. */
  batch503?: { count: number };
  /** Destroy the connection half-way through the body of the next `count` LFS PUTs. */
  dropPut?: { count: number };
  /**
   * Lose the second half of the next `count` LFS PUT bodies in transit. As the real LFS storage does,
   * the server then refuses the upload (the bytes do not hash to the declared oid and size) and stores nothing.
   */
  truncatePut?: { count: number };
  /**
   * Apply the next `count` commit POSTs, then fail their reply: `drop` destroys the connection before
   * any answer, `500` answers 500 (a proxy timing out after the Hub applied the commit). @default drop
   */
  commitLostReply?: {
    count: number;
    as?: 'drop' | 500 /** Let this many commits through first. @default 0 */;
    skip?: number;
  };
  /**
   * Flip one byte of the next `count` LFS PUT bodies in transit (size unchanged): the upload is refused as
   * for truncatePut.
   */
  corruptPut?: { count: number };
  /**
   * Serve one flipped byte in the next `count` resolve/raw bodies longer than one byte
   * (optionally only for paths containing `pathIncludes`). The size stays right.
   */
  wrongBytes?: { count: number; pathIncludes?: string };
  /**
   * Store one flipped byte of the next `count` regular (non-LFS) files committed inline, longer than one byte
   * (optionally only for paths containing `pathIncludes`): a Hub that loses or alters data at rest. Its
   * listing then shows the git blob id of the bytes it holds, as the real Hub's does.
   */
  wrongStored?: { count: number; pathIncludes?: string };
  /** Answer every Hub call (not LFS storage PUTs) with 401, as for an expired token. */
  unauthorized?: boolean;
  /** Answer every write with 403, as for a read-only token. */
  forbidden?: boolean;
  /**
   * An outage: until this wall-clock time (ms since the epoch), every Hub call except the admin route
   * fails (`drop`: the connection is destroyed with no answer; `503`: Service Unavailable). @default none
   */
  outageUntilMs?: number;
  /** How the outage fails requests. @default 503 */
  outageAs?: 'drop' | 503;
  /**
   * Start an outage of `durationMs` right after the next `afterCommits` commits were answered (sets
   * outageUntilMs then).
   */
  outageAfter?: { afterCommits: number; durationMs: number };
  /**
   * The Hub's hourly commit quota: once `perHour` commits of a repo were answered within the last hour (by the
   * server's clock), a commit is refused with 429 and the Hub's text ("You have exceeded our hourly quotas for
   * action: commit"), a `Retry-After` of the seconds until the oldest of them leaves the hour (or `retryAfterS`
   * when set; `null` sends none), and a `RateLimit` header with the same `t=`. Not a counted fault: it stays on.
   */
  commitQuota?: { perHour: number; retryAfterS?: number | null };
}
