// Crash harness shared by the crash-safety test and the bench: a child pushing checkpoints is
// SIGKILLed at a phase, then the repo is checked and a fresh process resumes and pulls.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runNode, spawnUntil, type HubServer } from '@soup/test-utils';
import { openStore, verifyCheckpoint, validatePointer, type CheckpointStore, type Pointer } from '../src/index';
import { checkpointContent, sha256 } from './_fixtures';

export const CRASH_PHASES = ['upload', 'uploaded', 'verified', 'pointer', 'prune'] as const;
export type CrashPhase = (typeof CRASH_PHASES)[number];
export type CrashStoreKind = 'hub' | 'dir';

const CHILD = fileURLToPath(new URL('./_crash-child.ts', import.meta.url));
const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
const RUN = 'crash-run-fingerprint';
const SIZES = { modelBytes: 48_000, optimizerBytes: 16_000 };

export interface CrashPointResult {
  kind: CrashStoreKind;
  phase: CrashPhase;
  /** Safety violations found (empty = the crash was survived). */
  violations: string[];
  /** Step the pointer named right after the kill. */
  pointerStepAfterKill: number | null;
  /** Step the fresh process resumed from. */
  resumedStep: number | null;
  /** How it got there (`newer-verified` = pointer repaired). */
  via: string | null;
}

async function checkPointer(store: CheckpointStore, label: string, violations: string[]): Promise<Pointer | null> {
  const raw = await store.readFile({ path: 'latest.json' });
  if (raw === null) {
    violations.push(`${label}: latest.json is missing`);
    return null;
  }
  const value: unknown = JSON.parse(new TextDecoder().decode(raw));
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
  if (!v.ok) violations.push(`${label}: latest.json names ${pointer.path_in_repo}, which does not verify: ${v.problems.join('; ')}`);
  return pointer;
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
    env: { ...env, SOUP_CRASH_MODE: p.unsafeOrder ? 'push-unsafe' : 'push', SOUP_CRASH_REPO: repo, SOUP_CRASH_WORK: pushWork, SOUP_CRASH_PAUSE_AT: p.phase },
    timeoutMs: 60_000,
  });
  child.kill('SIGKILL');
  const killed = await exited;
  if (killed.signal !== 'SIGKILL') violations.push(`push child was not killed by SIGKILL (code ${killed.code}, signal ${killed.signal})`);

  const store = openStore({ repo, token: env.HF_TOKEN, endpoint: env.HF_ENDPOINT });
  const before = await checkPointer(store, 'after kill', violations);

  const res = await runNode(['--import', 'tsx', CHILD], {
    cwd: PKG_DIR,
    env: { ...env, SOUP_CRASH_MODE: 'resume', SOUP_CRASH_REPO: repo, SOUP_CRASH_WORK: resumeWork },
    timeoutMs: 60_000,
  });
  let resumedStep: number | null = null;
  let via: string | null = null;
  const line = res.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (res.code !== 0 || !line) {
    violations.push(`resume process failed (code ${res.code}): ${res.stderr.slice(-800)}`);
  } else {
    const result = JSON.parse(line.slice('RESULT '.length)) as { step: number; via: string | null; files: Record<string, string> };
    resumedStep = result.step;
    via = result.via;
    const expected = Object.fromEntries(Object.entries(checkpointContent(result.step, RUN, SIZES, salt)).map(([n, b]) => [n, sha256(b)]));
    if (JSON.stringify(sortKeys(result.files)) !== JSON.stringify(sortKeys(expected))) {
      violations.push(`pulled checkpoint-${result.step} does not hash-match what was pushed`);
    }
    if (!res.stdout.includes('PUSHED 30')) violations.push('the resumed session could not push checkpoint-30');
  }
  const after = await checkPointer(store, 'after resume', violations);
  if (after && res.code === 0 && after.step !== 30) violations.push(`after the resumed push the pointer names step ${after.step}, not 30`);
  return { kind: p.kind, phase: p.phase, violations, pointerStepAfterKill: before?.step ?? null, resumedStep, via };
}

function sortKeys(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
