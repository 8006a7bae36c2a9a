// What every endpoint of the local Hub-protocol test server shares: the on-disk state, the valid
// token, the fault switches in force, the counters the handle reports, and the gates (auth, read,
// write, revision) each endpoint checks in the same order as the Hub.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError } from './_hub-server-http';
import type { HubServerFaults } from './hub-server-faults';
import type { HubRepoRecord, HubServerState } from './hub-server-state';

export type HubAuth = 'ok' | 'anonymous' | 'invalid';

/** The counted faults: each applies to the next `count` matching requests. */
export type CountedFault =
  | 'commit429'
  | 'commit500'
  | 'batch503'
  | 'dropPut'
  | 'truncatePut'
  | 'commitLostReply'
  | 'corruptPut';

export class HubServerContext {
  faults: HubServerFaults;
  /** NDJSON commits answered 200 per `type:id`. */
  readonly commits: Map<string, number> = new Map();
  /** Super-squashes answered 200 per `type:id`. */
  readonly squashes: Map<string, number> = new Map();
  /** When each commit was answered (by `now`), per `type:id`: the hourly commit quota's window. */
  readonly commitTimes: Map<string, number[]> = new Map();
  /** ETag of each multipart part received, per `oid:partNumber`, until its upload completes. */
  readonly partEtags: Map<string, string> = new Map();

  constructor(
    readonly state: HubServerState,
    readonly token: string,
    readonly pageSize: number,
    readonly lfsThreshold: number,
    faults: HubServerFaults,
    /** Objects larger than this get the multipart transfer in parts of this size; undefined: basic only. */
    readonly multipartChunkBytes?: number,
    /** The server's clock (the commit quota's hour). */
    readonly now: () => number = Date.now,
  ) {
    this.faults = faults;
  }

  /** Uses up one count of a counted fault: true when it applies to this request. */
  take(name: CountedFault): boolean {
    const f = this.faults[name];
    if (!f || f.count <= 0) return false;
    f.count -= 1;
    return true;
  }

  checkAuth(req: IncomingMessage): HubAuth {
    const header = req.headers.authorization;
    if (header === undefined) return 'anonymous';
    return header === `Bearer ${this.token}` ? 'ok' : 'invalid';
  }

  canRead(repo: HubRepoRecord, auth: string): boolean {
    return !repo.private || auth === 'ok';
  }

  /** Write gate: returns true when the request may write, after answering otherwise. */
  writeGate(res: ServerResponse, auth: string): boolean {
    if (auth !== 'ok') {
      sendError(res, 401, 'You must be authenticated to access this resource');
      return false;
    }
    if (this.faults.forbidden) {
      sendError(res, 403, 'You do not have write access to this repository (read-only token)');
      return false;
    }
    return true;
  }

  checkRev(res: ServerResponse, repo: HubRepoRecord, rev: string | undefined): boolean {
    if (rev === 'main' || rev === repo.head) return true;
    sendError(res, 404, `Revision not found: ${rev ?? ''}`, 'RevisionNotFound');
    return false;
  }
}
