// A file copied into the directory store's staging in the pass that hashes it for the manifest: the kernel copies it
// (a reflink where the file system has one, else copy_file_range) and a worker thread reads the copy behind the
// kernel while it writes, hashing what it reads (_copy-worker-source.ts). The manifest's sha256 is therefore the hash
// of the bytes the store holds, read from the store's file: the check a pull makes, made before anything is
// committed. That the copy is the source rests on the kernel's copy, as for `cp`, and on the source's identity
// (device, inode, size, mtime and ctime in nanoseconds) being the same before the copy and after it, with the copy's
// size equal to the source's: a trainer still writing moves it. The source is not read by soup at all: a push costs
// one kernel copy and one sha256 pass over the copy. The hashing runs in worker threads so that two files are hashed
// on two cores; the push's own thread only waits.
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { COPY_WORKER_SOURCE } from './_copy-worker-source';
import { fsyncPath, identityOf } from './_fs';
import { StoreError } from './errors';

interface Job {
  src: string;
  dest: string;
  gitBlobSizeBytes: number | undefined;
  sizeBytes: number;
}

interface Answer {
  sha256: string;
  sizeBytes: number;
  gitSha1?: string;
}

interface Lane {
  worker: Worker;
  waiting: Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>;
}

// Workers are kept between pushes and ended after 10 minutes without a job: starting one costs 20-40 ms, a session
// pushes every few minutes, and an idle worker holds a few MiB. A worker holds the process open only while it has a
// job.
const IDLE_MS = 10 * 60_000;
const LANES = Math.min(2, availableParallelism());
const lanes: Lane[] = [];
let nextId = 0;
let idleTimer: NodeJS.Timeout | undefined;

function startLane(): Lane {
  const lane: Lane = { worker: new Worker(COPY_WORKER_SOURCE, { eval: true }), waiting: new Map() };
  const fail = (err: Error): void => {
    if (lanes.includes(lane)) lanes.splice(lanes.indexOf(lane), 1);
    for (const w of lane.waiting.values()) w.reject(err);
    lane.waiting.clear();
  };
  lane.worker.on('message', (m: Answer & { id: number; error?: string; code?: string }) => {
    const w = lane.waiting.get(m.id);
    lane.waiting.delete(m.id);
    if (lane.waiting.size === 0) lane.worker.unref();
    if (m.error !== undefined)
      w?.reject(Object.assign(new Error(m.error), m.code === undefined ? {} : { code: m.code }));
    else
      w?.resolve({
        sha256: m.sha256,
        sizeBytes: m.sizeBytes,
        ...(m.gitSha1 === undefined ? {} : { gitSha1: m.gitSha1 }),
      });
    armIdle();
  });
  lane.worker.on('error', fail);
  lane.worker.on('exit', () => {
    if (lanes.includes(lane)) fail(new StoreError('directory store: a copy worker exited'));
  });
  // After the listeners: adding a 'message' listener refs the worker again, and a worker that never had a job (a
  // push refused before its first copy) would then hold the process open.
  lane.worker.unref();
  lanes.push(lane);
  return lane;
}

function armIdle(): void {
  clearTimeout(idleTimer);
  if (lanes.some((l) => l.waiting.size > 0)) return;
  idleTimer = setTimeout(() => {
    for (const l of lanes.splice(0)) void l.worker.terminate();
  }, IDLE_MS);
  idleTimer.unref();
}

/** Starts the copy workers ahead of the first copy (a staging opened: its files come once the folder is walked). */
export function warmCopyWorkers(): void {
  while (lanes.length < LANES) startLane();
  armIdle();
}

function run(job: Job): Promise<Answer> {
  clearTimeout(idleTimer);
  const free = lanes.find((l) => l.waiting.size === 0);
  const lane =
    free ?? (lanes.length < LANES ? startLane() : lanes.reduce((a, b) => (b.waiting.size < a.waiting.size ? b : a)));
  const id = nextId++;
  lane.worker.ref();
  return new Promise((resolve, reject) => {
    lane.waiting.set(id, { resolve, reject });
    lane.worker.postMessage({ id, ...job });
  });
}

export interface HashedCopy {
  /** Of the bytes read back from the copy. */
  sha256: string;
  sizeBytes: number;
  /** git blob id when asked for with `gitBlobSizeBytes` and the file had that size. */
  gitSha1?: string;
  /** Settles once the copy is fsynced; rejects when the fsync failed. */
  landed: Promise<void>;
  /** The source's identity before the copy and after it: unequal when it was written to meanwhile. */
  identityBefore: string;
  identityAfter: string;
}

/** Copies `src` to the new file `dest` by the kernel and hashes the copy; `landed` says when it is fsynced. */
export async function copyHashing(src: string, dest: string, gitBlobSizeBytes?: number): Promise<HashedCopy> {
  const before = await stat(src, { bigint: true });
  const got = await run({ src, dest, gitBlobSizeBytes, sizeBytes: Number(before.size) });
  const identityBefore = identityOf(before);
  const identityAfter = identityOf(await stat(src, { bigint: true }));
  if (BigInt(got.sizeBytes) !== before.size && identityAfter === identityBefore) {
    throw new StoreError(`directory store: ${dest} holds ${got.sizeBytes} bytes, its source ${src} ${before.size}`);
  }
  // The write-back to disk goes on while the caller hashes its next file; the commit awaits it.
  const landed = fsyncPath(dest);
  landed.catch(() => undefined);
  return { ...got, landed, identityBefore, identityAfter };
}
