// Crash harness shared by the crash-safety test and the bench: a child pushing checkpoints is
// SIGKILLed at a phase, then the repo is checked and a fresh process resumes and pulls.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runNode, spawnUntil, type HubServer } from '@soup/test-utils';
import { openStore, verifyCheckpoint, validatePointer, type CheckpointStore, type Pointer } from '../src/index';
import { checkpointContent, sha256 } from './_fixtures';

export const CRASH_PHASES = ['upload', 'uploaded', 'verified', 'pointer', 'prune'] as const;
export type CrashPhase = (typeof CRASH_PHASES)[number];
/**
 * Faults beyond a kill: the pointer+prune commit of step 20 lands but its reply is lost (dropped
 * connection, or a 500) — Hub only, a directory has no reply to lose; and corruption at rest of the
 * pointed checkpoint after a complete push — both stores.
 */
export const FAULT_POINTS = ['lost-reply-drop', 'lost-reply-500', 'corrupt-at-rest'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];
export const faultKinds = (f: FaultPoint): CrashStoreKind[] => (f === 'corrupt-at-rest' ? ['hub', 'dir'] : ['hub']);
export type CrashStoreKind = 'hub' | 'dir';

const CHILD = fileURLToPath(new URL('./_crash-child.ts', import.meta.url));
const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
const RUN = 'crash-run-fingerprint';
const SIZES = { modelBytes: 48_000, optimizerBytes: 16_000 };

export interface CrashPointResult {
  kind: CrashStoreKind;
  phase: CrashPhase | FaultPoint | RacePoint;
  /** Safety violations found (empty = the crash was survived). */
  violations: string[];
  /** Step the pointer named right after the kill. */
  pointerStepAfterKill: number | null;
  /** Step the fresh process resumed from. */
  resumedStep: number | null;
  /** How it got there (`newer-verified` = pointer repaired). */
  via: string | null;
}

// A writer racing the check can move the pointer and prune the folder it named between the check's read of
// latest.json and its verification. The pointer's step only grows (a regression is refused), so a pointer that reads
// the same after the failed verification named that folder throughout it: a real violation. One that moved since
// says nothing, and the check starts again from the new pointer.
async function checkPointer(store: CheckpointStore, label: string, violations: string[]): Promise<Pointer | null> {
  const decode = (raw: Uint8Array) => new TextDecoder().decode(raw);
  let raw = await store.readFile({ path: 'latest.json' });
  for (let attempt = 0; ; attempt++) {
    if (raw === null) {
      violations.push(`${label}: latest.json is missing`);
      return null;
    }
    const value: unknown = JSON.parse(decode(raw));
    const { errors } = validatePointer(value);
    if (errors.length > 0) {
      violations.push(`${label}: latest.json invalid: ${errors.join('; ')}`);
      return null;
    }
    const pointer = value as Pointer;
    const v = await verifyCheckpoint({
      store,
      pathInRepo: pointer.path_in_repo,
      expectedManifestSha256: pointer.manifest_sha256,
      expectedRun: RUN,
      expectedStep: pointer.step,
    });
    if (v.ok) return pointer;
    const again = await store.readFile({ path: 'latest.json' });
    if (again === null || decode(again) === decode(raw) || attempt >= 4) {
      violations.push(
        `${label}: latest.json names ${pointer.path_in_repo}, which does not verify: ${v.problems.join('; ')}`,
      );
      return pointer;
    }
    raw = again;
  }
}

/** Runs one crash point end to end. `workDir` must be an empty temp dir; `server` is needed for kind "hub". */
export async function runCrashPoint(p: {
  kind: CrashStoreKind;
  phase: CrashPhase;
  workDir: string;
  server?: HubServer;
  /** Negative control: the child moves the pointer before uploading (the order soup forbids). */
  unsafeOrder?: boolean;
}): Promise<CrashPointResult> {
  const violations: string[] = [];
  let repo: string;
  // Fresh bytes per crash point, so no upload is skipped because the server already holds an object.
  const salt = Math.random().toString(36).slice(2);
  const env: NodeJS.ProcessEnv = { ...process.env, SOUP_CRASH_SIZES: JSON.stringify(SIZES), SOUP_CRASH_SALT: salt };
  if (p.kind === 'hub') {
    if (!p.server) throw new Error('runCrashPoint: kind "hub" needs a server');
    repo = `soup-test/crash-${p.phase}-${Math.random().toString(36).slice(2, 8)}`;
    env.HF_TOKEN = p.server.token;
    env.HF_ENDPOINT = p.server.url;
  } else {
    repo = pathToFileURL(join(p.workDir, 'remote')).href;
  }
  const pushWork = join(p.workDir, 'session-1');
  const resumeWork = join(p.workDir, 'session-2');
  mkdirSync(pushWork, { recursive: true });
  mkdirSync(resumeWork, { recursive: true });

  const marker = p.unsafeOrder ? /PHASE pointer-first/ : new RegExp(`PHASE ${p.phase}\\b`);
  const { child, exited } = await spawnUntil(process.execPath, ['--import', 'tsx', CHILD], marker, {
    cwd: PKG_DIR,
    env: {
      ...env,
      SOUP_CRASH_MODE: p.unsafeOrder ? 'push-unsafe' : 'push',
      SOUP_CRASH_REPO: repo,
      SOUP_CRASH_WORK: pushWork,
      SOUP_CRASH_PAUSE_AT: p.phase,
    },
    timeoutMs: 60_000,
  });
  child.kill('SIGKILL');
  const killed = await exited;
  if (killed.signal !== 'SIGKILL')
    violations.push(`push child was not killed by SIGKILL (code ${killed.code}, signal ${killed.signal})`);

  const store = openStore({ repo, token: env.HF_TOKEN, endpoint: env.HF_ENDPOINT });
  const before = await checkPointer(store, 'after kill', violations);

  const r = await resumeAndCheck({ store, env, repo, resumeWork, salt, violations });
  return {
    kind: p.kind,
    phase: p.phase,
    violations,
    pointerStepAfterKill: before?.step ?? null,
    resumedStep: r.resumedStep,
    via: r.via,
  };
}

/** A fresh process resumes (pullResume), its pulled files must hash-match what was pushed, and it pushes step 30. */
async function resumeAndCheck(p: {
  store: CheckpointStore;
  env: NodeJS.ProcessEnv;
  repo: string;
  resumeWork: string;
  salt: string;
  violations: string[];
}): Promise<{ resumedStep: number | null; via: string | null; skipped: number[] }> {
  const { store, env, repo, resumeWork, salt, violations } = p;
  const res = await runNode(['--import', 'tsx', CHILD], {
    cwd: PKG_DIR,
    env: { ...env, SOUP_CRASH_MODE: 'resume', SOUP_CRASH_REPO: repo, SOUP_CRASH_WORK: resumeWork },
    timeoutMs: 60_000,
  });
  let resumedStep: number | null = null;
  let via: string | null = null;
  let skipped: number[] = [];
  const line = res.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (res.code !== 0 || !line) {
    violations.push(`resume process failed (code ${res.code}): ${res.stderr.slice(-800)}`);
  } else {
    const result = JSON.parse(line.slice('RESULT '.length)) as {
      step: number;
      via: string | null;
      skipped: number[];
      files: Record<string, string>;
    };
    resumedStep = result.step;
    via = result.via;
    skipped = result.skipped;
    const expected = Object.fromEntries(
      Object.entries(checkpointContent(result.step, RUN, SIZES, salt)).map(([n, b]) => [n, sha256(b)]),
    );
    if (JSON.stringify(sortKeys(result.files)) !== JSON.stringify(sortKeys(expected))) {
      violations.push(`pulled checkpoint-${result.step} does not hash-match what was pushed`);
    }
    if (!res.stdout.includes('PUSHED 30')) violations.push('the resumed session could not push checkpoint-30');
  }
  const after = await checkPointer(store, 'after resume', violations);
  if (after && res.code === 0 && after.step !== 30)
    violations.push(`after the resumed push the pointer names step ${after.step}, not 30`);
  return { resumedStep, via, skipped };
}

/** Runs one fault point end to end (see FAULT_POINTS). */
export async function runFaultPoint(p: {
  kind: CrashStoreKind;
  fault: FaultPoint;
  workDir: string;
  server?: HubServer;
}): Promise<CrashPointResult> {
  const violations: string[] = [];
  const salt = Math.random().toString(36).slice(2);
  const env: NodeJS.ProcessEnv = { ...process.env, SOUP_CRASH_SIZES: JSON.stringify(SIZES), SOUP_CRASH_SALT: salt };
  let repo: string;
  const server = p.server;
  if (p.kind === 'hub') {
    if (!server) throw new Error('runFaultPoint: kind "hub" needs a server');
    repo = `soup-test/fault-${p.fault}-${Math.random().toString(36).slice(2, 8)}`;
    env.HF_TOKEN = server.token;
    env.HF_ENDPOINT = server.url;
  } else {
    if (p.fault !== 'corrupt-at-rest') throw new Error(`runFaultPoint: ${p.fault} needs a Hub store`);
    repo = pathToFileURL(join(p.workDir, 'remote')).href;
  }
  const pushWork = join(p.workDir, 'session-1');
  const resumeWork = join(p.workDir, 'session-2');
  mkdirSync(pushWork, { recursive: true });
  mkdirSync(resumeWork, { recursive: true });
  // Commits of the push child: data 5, pointer 5, data 10, pointer 10, data 20, then pointer 20 + prune 5.
  if (p.fault !== 'corrupt-at-rest')
    server?.setFaults({ commitLostReply: { count: 1, skip: 5, as: p.fault === 'lost-reply-500' ? 500 : 'drop' } });
  const push = await runNode(['--import', 'tsx', CHILD], {
    cwd: PKG_DIR,
    env: { ...env, SOUP_CRASH_MODE: 'push', SOUP_CRASH_REPO: repo, SOUP_CRASH_WORK: pushWork },
    timeoutMs: 60_000,
  });
  if (p.fault !== 'corrupt-at-rest') {
    if ((server?.getFaults().commitLostReply?.count ?? 0) !== 0) violations.push('the lost-reply fault never fired');
    server?.setFaults({});
  }
  if (push.code !== 0 || !push.stdout.includes('COMPLETED'))
    violations.push(`push child failed (code ${push.code}): ${push.stderr.slice(-800)}`);
  const store = openStore({ repo, token: env.HF_TOKEN, endpoint: env.HF_ENDPOINT });
  const before = await checkPointer(store, 'after push', violations);
  if (before && before.step !== 20) violations.push(`after the push the pointer names step ${before.step}, not 20`);
  if ((await store.list({ prefix: 'ckpt/checkpoint-5' })).length > 0)
    violations.push('ckpt/checkpoint-5 was not pruned');
  let expectStep = 20;
  if (p.fault === 'corrupt-at-rest') {
    const path = 'ckpt/checkpoint-20/model.safetensors';
    if (p.kind === 'hub') server?.corruptAtRest(repo, path);
    else {
      const file = join(p.workDir, 'remote', ...path.split('/'));
      const b = readFileSync(file);
      b[100] = (b[100] ?? 0) ^ 0xff;
      writeFileSync(file, b);
    }
    expectStep = 10;
  }
  const r = await resumeAndCheck({ store, env, repo, resumeWork, salt, violations });
  if (r.resumedStep !== expectStep) violations.push(`resumed from step ${r.resumedStep}, expected ${expectStep}`);
  if (p.fault === 'corrupt-at-rest' && (r.via !== 'fallback' || !r.skipped.includes(20)))
    violations.push(`expected a fallback past checkpoint-20, got via ${r.via}, skipped ${JSON.stringify(r.skipped)}`);
  return {
    kind: p.kind,
    phase: p.fault,
    violations,
    pointerStepAfterKill: before?.step ?? null,
    resumedStep: r.resumedStep,
    via: r.via,
  };
}

function sortKeys(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Writers racing on one store: the lease, then (as if the lease were gone) two pushers at once. Both stores. */
export const RACE_POINTS = ['two-writer-race', 'outage'] as const;
export type RacePoint = (typeof RACE_POINTS)[number];
export const raceKinds = (r: RacePoint): CrashStoreKind[] => (r === 'outage' ? ['hub'] : ['hub', 'dir']);

/** Runs one race point in this process (see RACE_POINTS). */
export async function runRacePoint(p: {
  kind: CrashStoreKind;
  race: RacePoint;
  workDir: string;
  server?: HubServer;
}): Promise<CrashPointResult> {
  const {
    acquireLease,
    pushCheckpoint,
    pullResume,
    LeaseHeldError,
    ConcurrentWriteError,
    FolderConflictError,
    PointedCheckpointConflictError,
    PointerRegressionError,
    StoreError,
  } = await import('../src/index');
  const { writeCheckpoint } = await import('./_fixtures');
  const violations: string[] = [];
  const server = p.server;
  const repo =
    p.kind === 'hub'
      ? `soup-test/race-${p.race}-${Math.random().toString(36).slice(2, 8)}`
      : pathToFileURL(join(p.workDir, 'remote')).href;
  const open = (retry?: { retries: number; baseDelayMs: number; maxDelayMs: number }) =>
    openStore({ repo, token: server?.token, endpoint: server?.url, ...(retry ? { retry } : {}) });
  if (p.kind === 'hub' && !server) throw new Error('runRacePoint: kind "hub" needs a server');
  let resumedStep: number | null = null;
  let via: string | null = null;
  let pointerAfter: number | null = null;
  if (p.race === 'two-writer-race') {
    // 1. The lease: two sessions at once, exactly one may win.
    const leases = await Promise.allSettled([
      acquireLease({ store: open(), run: RUN, autoRenew: false, pid: process.pid }),
      acquireLease({ store: open(), run: RUN, autoRenew: false, pid: process.pid, host: 'other-host' }),
    ]);
    const won = leases.filter((l) => l.status === 'fulfilled');
    const refused = leases.filter((l) => l.status === 'rejected' && l.reason instanceof LeaseHeldError);
    if (won.length !== 1 || refused.length !== 1)
      violations.push(
        `lease race: ${won.length} won, ${refused.length} refused as held (` +
          `${leases.map((l) => (l.status === 'rejected' ? String(l.reason) : 'ok')).join('; ')})`,
      );
    for (const l of won) if (l.status === 'fulfilled') await l.value.release();
    // 2. Defence in depth, no lease: two writers push the same steps at once; every refusal is a clean one,
    // and the pointer always names a folder that verifies (no data commit replaced a pointed folder).
    const writer = async (salt: string): Promise<number[]> => {
      const done: number[] = [];
      const store = open();
      for (const step of [5, 10, 20]) {
        const ck = writeCheckpoint({ root: join(p.workDir, salt), step, run: RUN, sizes: SIZES, salt });
        try {
          await pushCheckpoint({ store, step, dir: ck.dir, run: RUN, keepRemote: 2 });
          done.push(step);
        } catch (err) {
          if (
            !(
              err instanceof ConcurrentWriteError ||
              err instanceof FolderConflictError ||
              err instanceof PointerRegressionError ||
              err instanceof PointedCheckpointConflictError
            )
          )
            violations.push(`writer ${salt}, step ${step}: unexpected ${String(err)}`);
        }
        // Whenever a pointer exists, it names a folder that verifies (before any push landed there is none).
        const check = open();
        if ((await check.readFile({ path: 'latest.json' })) !== null)
          await checkPointer(check, `writer ${salt} after step ${step}`, violations);
      }
      return done;
    };
    await Promise.all([writer('a'), writer('b')]);
  } else {
    // A Hub outage between two pushes: the push during it fails cleanly, the next one lands.
    const store = open({ retries: 1, baseDelayMs: 50, maxDelayMs: 200 });
    const push = (step: number) =>
      pushCheckpoint({
        store,
        step,
        dir: writeCheckpoint({ root: p.workDir, step, run: RUN, sizes: SIZES }).dir,
        run: RUN,
        keepRemote: 2,
      });
    await push(5);
    server?.setFaults({ outageUntilMs: Date.now() + 1500 });
    try {
      await push(10);
      violations.push('the push during the outage did not fail');
    } catch (err) {
      if (!(err instanceof StoreError))
        violations.push(`the push during the outage failed with ${String(err)}, not StoreError`);
    }
    await checkPointer(open(), 'during the outage', violations);
    await new Promise((r) => setTimeout(r, 1600));
    server?.setFaults({});
    await push(20);
  }
  const after = await checkPointer(open(), 'after the race', violations);
  pointerAfter = after?.step ?? null;
  const dir = join(p.workDir, 'resume');
  try {
    const r = await pullResume({ store: open(), run: RUN, dir });
    if (r.outcome === 'resume') {
      resumedStep = r.step;
      via = r.via;
    } else violations.push(`resume found ${r.outcome}`);
  } catch (err) {
    violations.push(`resume failed: ${String(err)}`);
  }
  if (p.race === 'outage' && resumedStep !== 20)
    violations.push(`after the outage the store resumed from ${resumedStep}, not 20`);
  return { kind: p.kind, phase: p.race, violations, pointerStepAfterKill: pointerAfter, resumedStep, via };
}
