// The messages of @soup/hub-ckpt's errors (errors.ts): each says what happened, what was left untouched, what to do.

/** Who holds a store's one-writer lease, as its lease file says. */
export interface LeaseHolder {
  /** The lease's id (`--take-over-lease` names it); absent in a holder built by hand. */
  id?: string;
  host: string;
  pid: number;
  since: string;
  run: string;
  expires_at: string;
}

/** What a ChecksumError compares: the manifest's size and sha256 against the downloaded file's. */
export interface ChecksumFacts {
  pathInRepo: string;
  file: string;
  expectedSha256: string;
  actualSha256: string;
  expectedBytes: number;
  actualBytes: number;
}

/** The pointer now (`from`) and where a push would move it. */
export interface RegressionFacts {
  where: string;
  from: { step: number; path_in_repo: string; terminal: boolean };
  toStep: number;
  toPath: string;
  terminal: boolean;
}

/** A refused symbolic link: what it says, why it is refused, and (outside) where it resolves. */
export interface UnsafeLinkFacts {
  link: string;
  target: string;
  reason: 'outside' | 'loop' | 'dangling';
  resolved?: string;
  root?: string;
}

/** The folder a push would write, and the two manifests that differ. */
export interface FolderConflictFacts {
  where: string;
  pathInRepo: string;
  theirRun: string | null;
  theirSha256: string;
  mineSha256: string;
}

export const staleRunText = (o: { pointerRun: string; run: string; pointerStep: number; where: string }): string =>
  `${o.where}: latest.json belongs to run "${o.pointerRun}" (step ${o.pointerStep}), ` +
  `not to this run "${o.run}". Refusing to resume or overwrite another run's checkpoints: ` +
  'use a new repo (or directory) for this run, or pass the same run fingerprint as the run that pushed them.';

export const verifyText = (o: { pathInRepo: string; problems: string[] }): string =>
  `${o.pathInRepo} did not verify after upload, so latest.json was not moved: ` +
  `${o.problems.slice(0, 5).join('; ')}` +
  (o.problems.length > 5 ? ` (and ${o.problems.length - 5} more)` : '') +
  '. Push again; if it repeats, the store is losing or altering data.';

export const checksumText = (o: ChecksumFacts): string =>
  `${o.pathInRepo}/${o.file}: downloaded ${o.actualBytes} bytes with sha256 ` +
  `${o.actualSha256.slice(0, 16)}…, ` +
  `the manifest says ${o.expectedBytes} bytes with sha256 ${o.expectedSha256.slice(0, 16)}…. ` +
  'Nothing was moved into place; pull again, or resume with fallback to an older checkpoint.';

export const unsafePathText = (path: string, reason: string): string =>
  `Refusing file name ${JSON.stringify(path)}: ${reason}. Checkpoint file names must be relative, use "/" and ` +
  `stay inside their folder.`;

export const pointedConflictText = (pathInRepo: string): string =>
  `${pathInRepo} is the checkpoint latest.json names and it holds different content; overwriting it in place ` +
  `would leave ` +
  'the pointer on unverified data. Push under a new step (or pushFinal), which moves the pointer only after ' +
  'verifying.';

export const concurrentWriteText = (o: { path: string; writer: string; where: string }): string =>
  `${o.where}: ${o.path} was changed by another writer (${o.writer}) since this writer read ` +
  `it; ` +
  'nothing was overwritten. Two processes are pushing to the same store: stop one of them, then push again.';

export const linkedEntryText = (path: string): string =>
  `${path} is a symbolic link inside a directory store; refusing to follow it (it could read, write or delete ` +
  `outside the store). ` +
  'Remove the link (or replace it with a real folder) and try again.';

export function pointerRegressionText(o: RegressionFacts): string {
  const { from } = o;
  return (
    `${o.where}: latest.json names ${from.path_in_repo} (step ${from.step}` +
    `${from.terminal ? ', terminal: the run is complete' : ''}); ` +
    `pushing ${o.toPath} (step ${o.toStep}${o.terminal ? ', terminal' : ''}) would move it ` +
    `${from.step > o.toStep ? 'backwards' : 'off the terminal checkpoint'}. ` +
    'Nothing was uploaded. Pass force (soup ckpt push --force) to move it anyway.'
  );
}

export function unsafeLinkText(o: UnsafeLinkFacts): string {
  const why =
    o.reason === 'outside'
      ? `resolves to ${o.resolved ?? o.target}, outside the folder being pushed (${o.root ?? '?'})`
      : o.reason === 'loop'
        ? 'is part of a symbolic-link loop'
        : 'points to nothing (a dangling link)';
  return (
    `${o.link} -> ${o.target} ${why}; nothing was uploaded. A push only reads inside the folder it ` +
    `pushes: ` +
    'replace the link with a copy of the file, or remove it.'
  );
}

/** A time left for a person: `1 m 52 s`, `9 m 56 s`, `3 s`, `1 h 02 m`. */
export function timeLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} m`;
}

/** Whether a lease's expiry is later than `nowMs`, and by how much, as a person reads it. */
const expiryText = (expiresAt: string, nowMs: number): string => {
  const left = Date.parse(expiresAt) - nowMs;
  return Number.isFinite(left) ? `expires in ${timeLeft(left)}, at ${expiresAt}` : `lease until ${expiresAt}`;
};

export const leaseHeldText = (where: string, h: LeaseHolder, o: { note?: string; nowMs: number }): string =>
  `${where} is held by another writer: ${h.id === undefined ? '' : `lease ${h.id}, `}host ${h.host}, pid ${h.pid}, ` +
  `since ${h.since}, run "${h.run}" (${expiryText(h.expires_at, o.nowMs)}). ` +
  `${o.note === undefined ? '' : `${o.note} `}` +
  'Nothing was written. Two sessions must not write one store: stop the other one, or wait for its lease to ' +
  'expire (--wait-lease waits for it; a dead session on this same host is taken over at once)' +
  (h.id === undefined
    ? '.'
    : `; if you know that session is dead (e.g. its VM was preempted), take its lease over now: ` +
      `--take-over-lease ${h.id}.`);

export const leaseLostText = (o: { where: string; lease: { id: string; expires_at: string } }): string =>
  `${o.where}: this session's lease ${o.lease.id} (until ${o.lease.expires_at}` +
  `) was taken by another writer; ` +
  'stopping before writing anything more. Raise the lease TTL if sessions are cut off from the store for long.';

export const folderConflictText = (o: FolderConflictFacts): string =>
  `${o.where}: ${o.pathInRepo} already holds another checkpoint (manifest sha256 ` +
  `${o.theirSha256.slice(0, 12)}…` +
  `${o.theirRun === null ? '' : `, run "${o.theirRun}"`}; this push's is ` +
  `${o.mineSha256.slice(0, 12)}…). Nothing was replaced: ` +
  'another writer may be using this store. Stop it; to replace the folder anyway, push with --force.';

export const diskFullText = (o: { path: string; bytesNeeded: number | null; what: string }): string =>
  `the disk holding ${o.path} is full (${o.what}` +
  `${o.bytesNeeded === null ? '' : `, which needs ${o.bytesNeeded} bytes`}); nothing was moved ` +
  `into place and the store's pointer is untouched. ` +
  'Free space there (or point the output / store at a larger disk) and run the same command again.';
