// Child process of the memory check (test and bench): one push or one cold pull of a checkpoint with one
// large file, in a process of its own so its peak RSS is soup's alone (the Hub server runs in the parent).
// Env: SOUP_RSS_MODE push | pull, SOUP_RSS_WORK (work dir), HF_ENDPOINT, HF_TOKEN, SOUP_RSS_REPO,
//      SOUP_RSS_BYTES (push: size of the large file), SOUP_RSS_DIR_ROOT (a directory store there instead of the Hub).
// Prints one line `RSS {"baselineKiB":…,"peakKiB":…,"ms":…}`: VmHWM before the transfer and after it.
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DirStore, HubStore, pullResume, pushCheckpoint } from '../src/index';

const RUN = 'rss-run-fingerprint';
const env = process.env;

/** VmHWM (peak resident set) of this process, in KiB, from /proc. */
function peakKiB(): number {
  const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  if (!m) throw new Error('no VmHWM in /proc/self/status');
  return Number(m[1]);
}

/**
 * A sparse file of `sizeBytes` with a written 1 MiB block every 256 MiB: the disk holds little, yet every
 * byte is read, hashed and sent like any other.
 */
function writeLargeSparse(path: string, sizeBytes: number): void {
  const fd = openSync(path, 'w');
  try {
    const block = Buffer.alloc(1024 * 1024);
    for (let at = 0, i = 1; at < sizeBytes; at += 256 * 1024 * 1024, i++) {
      block.fill(i % 251);
      writeSync(fd, block, 0, Math.min(block.length, sizeBytes - at), at);
    }
    writeSync(fd, Buffer.from([7]), 0, 1, sizeBytes - 1);
  } finally {
    closeSync(fd);
  }
}

const work = env.SOUP_RSS_WORK ?? '';
const store = env.SOUP_RSS_DIR_ROOT
  ? new DirStore({ root: env.SOUP_RSS_DIR_ROOT })
  : new HubStore({ repo: env.SOUP_RSS_REPO ?? '', endpoint: env.HF_ENDPOINT, token: env.HF_TOKEN });
let before: number;
const t0 = performance.now();
if (env.SOUP_RSS_MODE === 'push') {
  const dir = join(work, 'out', 'checkpoint-10');
  mkdirSync(dir, { recursive: true });
  writeLargeSparse(join(dir, 'optimizer.pt'), Number(env.SOUP_RSS_BYTES));
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: 10 }));
  before = peakKiB();
  await pushCheckpoint({ store, step: 10, dir, run: RUN });
} else {
  before = peakKiB();
  const got = await pullResume({ store, run: RUN, dir: join(work, 'pulled') });
  if (got.outcome !== 'resume') throw new Error(`expected a resume, got ${got.outcome}`);
}
const ms = Math.round(performance.now() - t0);
process.stdout.write(`RSS ${JSON.stringify({ baselineKiB: before, peakKiB: peakKiB(), ms })}\n`);
