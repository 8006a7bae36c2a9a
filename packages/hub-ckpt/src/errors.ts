/** Every error of @soup/hub-ckpt (their messages are built in _error-text.ts). Messages never contain a token. */
import {
  checksumText,
  concurrentWriteText,
  diskFullText,
  folderConflictText,
  leaseHeldText,
  leaseLostText,
  linkedEntryText,
  pointedConflictText,
  pointerRegressionText,
  staleRunText,
  unsafeLinkText,
  unsafePathText,
  verifyText,
  type ChecksumFacts,
  type FolderConflictFacts,
  type LeaseHolder,
  type RegressionFacts,
  type UnsafeLinkFacts,
} from './_error-text';

interface ErrorOptions {
  cause?: unknown;
}

/** Stable error codes of @soup/hub-ckpt. */
export type HubCkptErrorCode =
  | 'SOUP_HUB_CKPT_INVALID_OPTION'
  | 'SOUP_HUB_CKPT_STORE'
  | 'SOUP_HUB_CKPT_AUTH'
  | 'SOUP_HUB_CKPT_STALE_RUN'
  | 'SOUP_HUB_CKPT_CORRUPT'
  | 'SOUP_HUB_CKPT_VERIFY'
  | 'SOUP_HUB_CKPT_CHECKSUM'
  | 'SOUP_HUB_CKPT_UNSAFE_PATH'
  | 'SOUP_HUB_CKPT_POINTED_CONFLICT'
  | 'SOUP_HUB_CKPT_PULL_TARGET_EXISTS'
  | 'SOUP_HUB_CKPT_CONCURRENT_WRITE'
  | 'SOUP_HUB_CKPT_LINKED_ENTRY'
  | 'SOUP_HUB_CKPT_POINTER_REGRESSION'
  | 'SOUP_HUB_CKPT_UNSAFE_LINK'
  | 'SOUP_HUB_CKPT_LEASE_HELD'
  | 'SOUP_HUB_CKPT_LEASE_LOST'
  | 'SOUP_HUB_CKPT_FOLDER_CONFLICT'
  | 'SOUP_HUB_CKPT_DISK_FULL'
  | 'SOUP_HUB_CKPT_COMMIT_QUOTA'
  | 'SOUP_HUB_CKPT_STORE_MISSING'
  | 'SOUP_HUB_CKPT_PULL_INTEGRITY';

/** Base class of every error @soup/hub-ckpt throws: a stable `code`, the `cause` kept. */
export class HubCkptError extends Error {
  override readonly name: string = 'HubCkptError';
  readonly code: HubCkptErrorCode;

  constructor(message: string, options: { code: HubCkptErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** An option or argument is invalid. `field` names it; the message says what is expected. */
export class InvalidCheckpointOptionError extends HubCkptError {
  override readonly name = 'InvalidCheckpointOptionError';
  declare readonly code: 'SOUP_HUB_CKPT_INVALID_OPTION';
  /** The offending field, e.g. `pushEvery`. */
  readonly field: string;

  constructor(message: string, options: ErrorOptions & { field: string }) {
    super(message, { code: 'SOUP_HUB_CKPT_INVALID_OPTION', cause: options.cause });
    this.field = options.field;
  }
}

/** A store call failed (HTTP status other than 401/403, network, or file system). Retries were already spent. */
export class StoreError extends HubCkptError {
  override readonly name = 'StoreError';
  declare readonly code: 'SOUP_HUB_CKPT_STORE';
  /** HTTP status, when the failure was an HTTP answer. */
  readonly status: number | undefined;
  /** The URL called (never carries a token), when known. */
  readonly url: string | undefined;
  /** The Hub's request id, when it sent one. */
  readonly requestId: string | undefined;

  constructor(message: string, options: ErrorOptions & { status?: number; url?: string; requestId?: string } = {}) {
    super(message, { code: 'SOUP_HUB_CKPT_STORE', cause: options.cause });
    this.status = options.status;
    this.url = options.url;
    this.requestId = options.requestId;
  }
}

/** The Hub refused the credentials (401) or the permission (403). The token itself is never included. */
export class HubAuthError extends HubCkptError {
  override readonly name = 'HubAuthError';
  declare readonly code: 'SOUP_HUB_CKPT_AUTH';
  /** 401 (no or invalid token) or 403 (token lacks the permission); 0 when refused before any call. */
  readonly status: number;
  readonly url: string | undefined;
  readonly requestId: string | undefined;

  constructor(message: string, options: ErrorOptions & { status: number; url?: string; requestId?: string }) {
    super(message, { code: 'SOUP_HUB_CKPT_AUTH', cause: options.cause });
    this.status = options.status;
    this.url = options.url;
    this.requestId = options.requestId;
  }
}

/** `latest.json` belongs to another run: resuming would mix two runs' checkpoints. */
export class StaleRunError extends HubCkptError {
  override readonly name = 'StaleRunError';
  declare readonly code: 'SOUP_HUB_CKPT_STALE_RUN';
  /** The fingerprint `latest.json` carries. */
  readonly pointerRun: string;
  /** The fingerprint of the run asking. */
  readonly run: string;
  /** The step `latest.json` names. */
  readonly pointerStep: number;

  constructor(options: ErrorOptions & { pointerRun: string; run: string; pointerStep: number; where: string }) {
    super(staleRunText(options), { code: 'SOUP_HUB_CKPT_STALE_RUN', cause: options.cause });
    this.pointerRun = options.pointerRun;
    this.run = options.run;
    this.pointerStep = options.pointerStep;
  }
}

/** The checkpoint `latest.json` names is missing files or does not match its manifest (or the pointer is invalid). */
export class CorruptCheckpointError extends HubCkptError {
  override readonly name = 'CorruptCheckpointError';
  declare readonly code: 'SOUP_HUB_CKPT_CORRUPT';
  /** Folder in the repo, e.g. `ckpt/checkpoint-120` (`latest.json` when the pointer itself is bad). */
  readonly pathInRepo: string;
  /** One line per problem found. */
  readonly problems: string[];

  constructor(message: string, options: ErrorOptions & { pathInRepo: string; problems: string[] }) {
    super(message, { code: 'SOUP_HUB_CKPT_CORRUPT', cause: options.cause });
    this.pathInRepo = options.pathInRepo;
    this.problems = options.problems;
  }
}

/** Push-time verification from the remote side failed: the pointer was NOT moved. */
export class VerifyError extends HubCkptError {
  override readonly name = 'VerifyError';
  declare readonly code: 'SOUP_HUB_CKPT_VERIFY';
  readonly pathInRepo: string;
  readonly problems: string[];

  constructor(options: ErrorOptions & { pathInRepo: string; problems: string[] }) {
    super(verifyText(options), { code: 'SOUP_HUB_CKPT_VERIFY', cause: options.cause });
    this.pathInRepo = options.pathInRepo;
    this.problems = options.problems;
  }
}

/** A pulled file's size or sha256 does not match the manifest (after the retries allowed). */
export class ChecksumError extends HubCkptError {
  override readonly name = 'ChecksumError';
  declare readonly code: 'SOUP_HUB_CKPT_CHECKSUM';
  /** File path inside the checkpoint folder. */
  readonly file: string;
  readonly expectedSha256: string;
  readonly actualSha256: string;
  readonly expectedBytes: number;
  readonly actualBytes: number;

  constructor(options: ErrorOptions & ChecksumFacts) {
    super(checksumText(options), { code: 'SOUP_HUB_CKPT_CHECKSUM', cause: options.cause });
    this.file = options.file;
    this.expectedSha256 = options.expectedSha256;
    this.actualSha256 = options.actualSha256;
    this.expectedBytes = options.expectedBytes;
    this.actualBytes = options.actualBytes;
  }
}

/** A file name would escape its folder (`..`, absolute path, backslash, empty segment): refused before any write. */
export class UnsafePathError extends HubCkptError {
  override readonly name = 'UnsafePathError';
  declare readonly code: 'SOUP_HUB_CKPT_UNSAFE_PATH';
  /** The refused name, as found. */
  readonly path: string;

  constructor(path: string, reason: string, options: ErrorOptions = {}) {
    super(unsafePathText(path, reason), { code: 'SOUP_HUB_CKPT_UNSAFE_PATH', cause: options.cause });
    this.path = path;
  }
}

/** A push would replace the content of the folder `latest.json` names, leaving the pointer on unverified data. */
export class PointedCheckpointConflictError extends HubCkptError {
  override readonly name = 'PointedCheckpointConflictError';
  declare readonly code: 'SOUP_HUB_CKPT_POINTED_CONFLICT';
  readonly pathInRepo: string;

  constructor(pathInRepo: string, options: ErrorOptions = {}) {
    super(pointedConflictText(pathInRepo), { code: 'SOUP_HUB_CKPT_POINTED_CONFLICT', cause: options.cause });
    this.pathInRepo = pathInRepo;
  }
}

/** The pull target already exists and `overwrite` was not set. */
export class PullTargetExistsError extends HubCkptError {
  override readonly name = 'PullTargetExistsError';
  declare readonly code: 'SOUP_HUB_CKPT_PULL_TARGET_EXISTS';
  readonly dir: string;

  constructor(dir: string) {
    super(`${dir} already exists: pass overwrite: true to replace it, or pull into an empty path.`, {
      code: 'SOUP_HUB_CKPT_PULL_TARGET_EXISTS',
    });
    this.dir = dir;
  }
}

/** A read (a pull, a resume into a folder) from a store that does not exist: nothing was ever pushed there. */
export class StoreMissingError extends HubCkptError {
  override readonly name = 'StoreMissingError';
  declare readonly code: 'SOUP_HUB_CKPT_STORE_MISSING';

  constructor(storeDescription: string) {
    super(`${storeDescription} does not exist: nothing was ever pushed there (is the repo name right?)`, {
      code: 'SOUP_HUB_CKPT_STORE_MISSING',
    });
  }
}

/** A pull of what latest.json names found it corrupt (its `cause` says how): nothing was moved into place. */
export class PullIntegrityError extends HubCkptError {
  override readonly name = 'PullIntegrityError';
  declare readonly code: 'SOUP_HUB_CKPT_PULL_INTEGRITY';

  constructor(message: string, options: ErrorOptions) {
    super(message, { code: 'SOUP_HUB_CKPT_PULL_INTEGRITY', cause: options.cause });
  }
}

/** Another writer changed the store between this writer's read and its commit (a parentCommit / ifMatch conflict). */
export class ConcurrentWriteError extends HubCkptError {
  override readonly name = 'ConcurrentWriteError';
  declare readonly code: 'SOUP_HUB_CKPT_CONCURRENT_WRITE';
  /** The contested file, e.g. `latest.json`. */
  readonly path: string;
  /** Who wrote it, as far as the store tells: the commit id and title, or the pointer's run and step. */
  readonly writer: string;

  constructor(options: ErrorOptions & { path: string; writer: string; where: string }) {
    super(concurrentWriteText(options), { code: 'SOUP_HUB_CKPT_CONCURRENT_WRITE', cause: options.cause });
    this.path = options.path;
    this.writer = options.writer;
  }
}

/** A directory store entry is a symbolic link: refused, since following it could read or write outside the store. */
export class LinkedEntryError extends HubCkptError {
  override readonly name = 'LinkedEntryError';
  declare readonly code: 'SOUP_HUB_CKPT_LINKED_ENTRY';
  /** The linked path on disk. */
  readonly path: string;

  constructor(path: string, options: ErrorOptions = {}) {
    super(linkedEntryText(path), { code: 'SOUP_HUB_CKPT_LINKED_ENTRY', cause: options.cause });
    this.path = path;
  }
}

/** A push would move latest.json to a lower step, or from a terminal pointer to a non-terminal one. */
export class PointerRegressionError extends HubCkptError {
  override readonly name = 'PointerRegressionError';
  declare readonly code: 'SOUP_HUB_CKPT_POINTER_REGRESSION';
  /** The step latest.json names now. */
  readonly pointerStep: number;
  readonly pointerTerminal: boolean;
  /** The step the push would point it at. */
  readonly step: number;

  constructor(options: ErrorOptions & RegressionFacts) {
    super(pointerRegressionText(options), { code: 'SOUP_HUB_CKPT_POINTER_REGRESSION', cause: options.cause });
    this.pointerStep = options.from.step;
    this.pointerTerminal = options.from.terminal;
    this.step = options.toStep;
  }
}

/**
 * A symbolic link in a folder being pushed leaves that folder, loops, or points nowhere: refused before anything is
 * uploaded.
 */
export class UnsafeLinkError extends HubCkptError {
  override readonly name = 'UnsafeLinkError';
  declare readonly code: 'SOUP_HUB_CKPT_UNSAFE_LINK';
  /** The link, as found in the folder. */
  readonly link: string;
  /** What the link says (its readlink text). */
  readonly target: string;
  readonly reason: 'outside' | 'loop' | 'dangling';

  constructor(options: ErrorOptions & UnsafeLinkFacts) {
    super(unsafeLinkText(options), { code: 'SOUP_HUB_CKPT_UNSAFE_LINK', cause: options.cause });
    this.link = options.link;
    this.target = options.target;
    this.reason = options.reason;
  }
}

/** Another session holds the store's one-writer lease: refused before anything is written. */
export class LeaseHeldError extends HubCkptError {
  override readonly name = 'LeaseHeldError';
  declare readonly code: 'SOUP_HUB_CKPT_LEASE_HELD';
  /** The holder as its lease file says. */
  readonly holder: LeaseHolder;

  /**
   * `note`: why this session did not wait or take over (e.g. the lease was renewed while it waited).
   * `nowMs`: the time the message counts the lease's time left from (default: now).
   */
  constructor(options: ErrorOptions & { where: string; holder: LeaseHolder; note?: string; nowMs?: number }) {
    const h = options.holder;
    const text = leaseHeldText(options.where, h, {
      ...(options.note === undefined ? {} : { note: options.note }),
      nowMs: options.nowMs ?? Date.now(),
    });
    super(text, { code: 'SOUP_HUB_CKPT_LEASE_HELD', cause: options.cause });
    this.holder = {
      ...(h.id === undefined ? {} : { id: h.id }),
      host: h.host,
      pid: h.pid,
      since: h.since,
      run: h.run,
      expires_at: h.expires_at,
    };
  }
}

/** This session's lease was taken by another writer (it expired while this session was cut off). */
export class LeaseLostError extends HubCkptError {
  override readonly name = 'LeaseLostError';
  declare readonly code: 'SOUP_HUB_CKPT_LEASE_LOST';

  constructor(options: ErrorOptions & { where: string; lease: { id: string; expires_at: string } }) {
    super(leaseLostText(options), { code: 'SOUP_HUB_CKPT_LEASE_LOST', cause: options.cause });
  }
}

/** The folder a push would write holds a different checkpoint (its manifest differs): refused, nothing replaced. */
export class FolderConflictError extends HubCkptError {
  override readonly name = 'FolderConflictError';
  declare readonly code: 'SOUP_HUB_CKPT_FOLDER_CONFLICT';
  readonly pathInRepo: string;
  /** The run its manifest names (null when unreadable). */
  readonly theirRun: string | null;

  constructor(options: ErrorOptions & FolderConflictFacts) {
    super(folderConflictText(options), { code: 'SOUP_HUB_CKPT_FOLDER_CONFLICT', cause: options.cause });
    this.pathInRepo = options.pathInRepo;
    this.theirRun = options.theirRun;
  }
}

/** The local disk (or the directory store's file system) is full: nothing was moved into place. */
export class DiskFullError extends HubCkptError {
  override readonly name = 'DiskFullError';
  declare readonly code: 'SOUP_HUB_CKPT_DISK_FULL';
  /** The folder being written. */
  readonly path: string;
  /** Bytes the operation needed in all (null when unknown). */
  readonly bytesNeeded: number | null;

  constructor(options: ErrorOptions & { path: string; bytesNeeded: number | null; what: string }) {
    super(diskFullText(options), { code: 'SOUP_HUB_CKPT_DISK_FULL', cause: options.cause });
    this.path = options.path;
    this.bytesNeeded = options.bytesNeeded;
  }
}

/**
 * The Hub refused a commit for its hourly commit quota (429 "exceeded our hourly quotas for action: commit"):
 * nothing was committed; the push queue waits `retryAfterMs` (or backs off) and pushes the newest checkpoint then.
 */
export class CommitQuotaError extends HubCkptError {
  override readonly name = 'CommitQuotaError';
  declare readonly code: 'SOUP_HUB_CKPT_COMMIT_QUOTA';
  /** What the Hub asked to wait (`Retry-After`, else the `RateLimit` header's `t=`), or null when it said nothing. */
  readonly retryAfterMs: number | null;

  constructor(options: ErrorOptions & { url: string; retryAfterMs: number | null; message: string }) {
    const wait =
      options.retryAfterMs === null ? 'no Retry-After' : `Retry-After ${Math.ceil(options.retryAfterMs / 1000)} s`;
    super(`the Hub refused a commit for its hourly commit quota (${wait}): ${options.message} (${options.url})`, {
      code: 'SOUP_HUB_CKPT_COMMIT_QUOTA',
      cause: options.cause,
    });
    this.retryAfterMs = options.retryAfterMs;
  }
}
