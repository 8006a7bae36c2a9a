// slow: every crash point kills a real child process with SIGKILL, then a fresh process resumes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import {
  CRASH_PHASES,
  FAULT_POINTS,
  faultKinds,
  RACE_POINTS,
  raceKinds,
  runCrashPoint,
  runFaultPoint,
  runRacePoint,
  type CrashPhase,
} from '../bench/_crash';
import { STORE_KINDS } from './_test-helpers';

// Where a fresh session must resume after a kill at each phase of pushing step 20 (step 10 was pushed).
const EXPECTED_STEP: Record<CrashPhase, number> = { upload: 10, uploaded: 20, verified: 20, pointer: 20, prune: 20 };

let server: HubServer;
let serverDir: { dir: string; cleanup: () => void };
beforeAll(async () => {
  serverDir = makeTempDir('soup-crash-hub-');
  server = await startHubServer({ dir: serverDir.dir });
});
afterAll(async () => {
  await server.close();
  expect(server.errors).toEqual([]);
  serverDir.cleanup();
});

describe.each(STORE_KINDS)('slow: SIGKILL at every push phase on %s store', (kind) => {
  it.each(CRASH_PHASES)(
    'killed at "%s": the pointer only ever names a verified checkpoint and a cold resume hash-matches',
    async (phase) => {
      const r = await runCrashPoint({ kind, phase, workDir: useTempDir('soup-crash-'), server });
      expect(r.violations).toEqual([]);
      expect(r.pointerStepAfterKill).toBe(phase === 'prune' ? 20 : 10);
      expect(r.resumedStep).toBe(EXPECTED_STEP[phase]);
      if (EXPECTED_STEP[phase] === 20 && phase !== 'prune') expect(r.via).toBe('newer-verified');
    },
    90_000,
  );
});

describe('slow: faults beyond a kill', () => {
  it.each(FAULT_POINTS.flatMap((f) => faultKinds(f).map((k) => [f, k] as const)))(
    '%s on %s store: the push completes or the resume falls back, and a cold resume hash-matches',
    async (fault, kind) => {
      const r = await runFaultPoint({ kind, fault, workDir: useTempDir('soup-fault-'), server });
      expect(r.violations).toEqual([]);
      expect(r.pointerStepAfterKill).toBe(20);
      expect(r.resumedStep).toBe(fault === 'corrupt-at-rest' ? 10 : 20);
      expect(r.via).toBe(fault === 'corrupt-at-rest' ? 'fallback' : null);
    },
    90_000,
  );
});

describe('slow: writers racing, and a Hub outage', () => {
  it.each(RACE_POINTS.flatMap((r) => raceKinds(r).map((k) => [r, k] as const)))(
    '%s on %s store: one lease wins, every refusal is clean, and the pointer always names a checkpoint that verifies',
    async (race, kind) => {
      const r = await runRacePoint({ kind, race, workDir: useTempDir('soup-race-'), server });
      expect(r.violations).toEqual([]);
      expect(r.resumedStep).toBe(20);
    },
    90_000,
  );
});

describe('slow: the crash harness is not vacuous', () => {
  it('flags a pusher that moves the pointer before its data', async () => {
    const r = await runCrashPoint({
      kind: 'dir',
      phase: 'pointer',
      workDir: useTempDir('soup-crash-'),
      unsafeOrder: true,
    });
    expect(
      r.violations.some((v) => v.startsWith('after kill: latest.json names ckpt/checkpoint-20, which does not verify')),
    ).toBe(true);
    // The fallback of pullResume still saves the session: it walks back to checkpoint-10.
    expect(r.resumedStep).toBe(10);
    expect(r.via).toBe('fallback');
  }, 90_000);
});
