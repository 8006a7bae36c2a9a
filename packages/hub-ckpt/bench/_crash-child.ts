// Child process of the crash harness. Env:
//   SOUP_CRASH_MODE   push | resume
//   SOUP_CRASH_REPO   file:///dir or namespace/name (HF_TOKEN / HF_ENDPOINT from the env)
//   SOUP_CRASH_WORK   local work dir
//   SOUP_CRASH_PAUSE_AT  (push) phase of the step-20 push at which to print "PHASE <phase>" and hang
//   SOUP_CRASH_SIZES  optional JSON {modelBytes, optimizerBytes}
//   SOUP_CRASH_SALT   optional salt mixed into the content (fresh bytes per crash point)
// push:   pushes checkpoint-5 and checkpoint-10 completely, then checkpoint-20 and hangs at the phase
//         (the parent SIGKILLs it); without SOUP_CRASH_PAUSE_AT it completes and prints COMPLETED.
// resume: pullResume (the one resume path, fallback on) into <work>/pulled, prints RESULT {json} with
//         the pulled files' sha256, then pushes checkpoint-30 and prints PUSHED.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildManifest, openStore, pullResume, pushCheckpoint, type PushPhaseEvent } from '../src/index';
import { sha256, writeCheckpoint } from './_fixtures';

const CRASH_RUN = 'crash-run-fingerprint';

const env = process.env;
const mode = env.SOUP_CRASH_MODE;
const work = env.SOUP_CRASH_WORK ?? '';
const sizes = env.SOUP_CRASH_SIZES
  ? (JSON.parse(env.SOUP_CRASH_SIZES) as { modelBytes: number; optimizerBytes: number })
  : undefined;
const store = openStore({ repo: env.SOUP_CRASH_REPO ?? '', retry: { baseDelayMs: 20, maxDelayMs: 1000 } });
const local = join(work, 'out');
const salt = env.SOUP_CRASH_SALT ?? '';

function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string): void => {
    for (const name of readdirSync(abs)) {
      const a = join(abs, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      if (statSync(a).isDirectory()) walk(a, r);
      else out[r] = sha256(readFileSync(a));
    }
  };
  walk(dir, '');
  return out;
}

if (mode === 'push') {
  const pauseAt = env.SOUP_CRASH_PAUSE_AT;
  for (const step of [5, 10]) {
    const a = writeCheckpoint({ root: local, step, run: CRASH_RUN, sizes, salt });
    await pushCheckpoint({ store, step, dir: a.dir, run: CRASH_RUN, keepRemote: 2, keepLocal: 1 });
  }
  const b = writeCheckpoint({ root: local, step: 20, run: CRASH_RUN, sizes, salt });
  let paused = false;
  await pushCheckpoint({
    store,
    step: 20,
    dir: b.dir,
    run: CRASH_RUN,
    keepRemote: 2,
    keepLocal: 1,
    onPhase: async (e: PushPhaseEvent) => {
      if (e.phase !== pauseAt || paused) return;
      paused = true;
      process.stdout.write(`PHASE ${e.phase} ${e.path ?? ''}\n`);
      setInterval(() => undefined, 1000); // keep the loop alive while we wait to be killed
      await new Promise<never>(() => undefined);
    },
  });
  process.stdout.write('COMPLETED\n');
} else if (mode === 'push-unsafe') {
  // Negative control for the harness: the wrong order (pointer before data), as some trainers did.
  const a = writeCheckpoint({ root: local, step: 10, run: CRASH_RUN, sizes, salt });
  await pushCheckpoint({ store, step: 10, dir: a.dir, run: CRASH_RUN, keepRemote: 2, keepLocal: 1 });
  const b = writeCheckpoint({ root: local, step: 20, run: CRASH_RUN, sizes, salt });
  const built = await buildManifest({ dir: b.dir, step: 20, run: CRASH_RUN });
  const pointer = {
    step: 20,
    path_in_repo: 'ckpt/checkpoint-20',
    run: CRASH_RUN,
    terminal: false,
    manifest_sha256: built.sha256,
    updated_at: new Date().toISOString(),
  };
  await store.commit({
    message: 'unsafe pointer first',
    operations: [{ kind: 'put', path: 'latest.json', bytes: Buffer.from(JSON.stringify(pointer)) }],
  });
  process.stdout.write('PHASE pointer-first\n');
  setInterval(() => undefined, 1000);
  await new Promise<never>(() => undefined);
} else if (mode === 'resume') {
  const outcome = await pullResume({ store, run: CRASH_RUN, dir: join(work, 'pulled') });
  if (outcome.outcome !== 'resume') {
    process.stdout.write(`RESULT ${JSON.stringify({ outcome: outcome.outcome })}\n`);
    process.exit(3);
  }
  const files = filesOf(outcome.localDir);
  delete files['manifest.json'];
  const skipped = outcome.skipped.map((k) => k.step);
  process.stdout.write(
    `RESULT ${JSON.stringify({
      outcome: outcome.outcome,
      step: outcome.step,
      via: outcome.via,
      repaired: outcome.repaired,
      skipped,
      files,
    })}\n`,
  );
  const c = writeCheckpoint({ root: local, step: 30, run: CRASH_RUN, sizes, salt });
  await pushCheckpoint({ store, step: 30, dir: c.dir, run: CRASH_RUN, keepRemote: 2, keepLocal: 1 });
  process.stdout.write('PUSHED 30\n');
} else {
  process.stderr.write(`unknown SOUP_CRASH_MODE ${String(mode)}\n`);
  process.exit(2);
}
