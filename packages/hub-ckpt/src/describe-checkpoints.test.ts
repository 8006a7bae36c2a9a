import { describe, expect, it } from 'vitest';
import type { CheckpointStatus } from './checkpoint-status';
import { describeList, describePull, describePush, describeResume, describeStatus } from './describe-checkpoints';
import type { PullResult } from './pull-checkpoint';
import type { PullResumeResult } from './pull-resume';
import type { PushResult } from './push-checkpoint';
import type { Pointer } from './types';

// Marks every styled part, so each test sees what is coloured and which formatter wrote what.
const style = {
  bold: (s: string) => `<b>${s}</b>`,
  dim: (s: string) => `<dim>${s}</dim>`,
  green: (s: string) => `<g>${s}</g>`,
  red: (s: string) => `<r>${s}</r>`,
  yellow: (s: string) => `<y>${s}</y>`,
  bytes: (n: number) => `${n / 1000} kB`,
  duration: (ms: number) => `${ms / 1000} s`,
  path: (p: string) => p.replace('/work/', ''),
};

const push = (over: Partial<PushResult> = {}): PushResult => ({
  step: 200,
  pathInRepo: 'ckpt/checkpoint-200',
  manifestSha256: 'a'.repeat(64),
  fileCount: 2,
  totalBytes: 3000,
  commits: 2,
  prunedRemote: [],
  prunedLocal: [],
  squashed: false,
  verify: { checkedByOid: 1, checkedByDownload: 1 },
  timings: { hashMs: 0, uploadMs: 0, verifyMs: 0, pointerMs: 0, pruneMs: 0, totalMs: 1500 },
  ...over,
});

const pullResult = (dir: string, step: number, over: Partial<PullResult> = {}): PullResult => ({
  dir,
  step,
  manifest: { step, run: 'r', files: {} },
  manifestSha256: 'c'.repeat(64),
  fileCount: 1,
  totalBytes: 1,
  ...over,
});

const pointer = (over: Partial<Pointer> = {}): Pointer => ({
  step: 200,
  path_in_repo: 'ckpt/checkpoint-200',
  run: 'r1',
  terminal: false,
  manifest_sha256: 'b'.repeat(64),
  updated_at: '2026-01-01T00:00:00Z',
  ...over,
});

const status = (over: Partial<CheckpointStatus> = {}): CheckpointStatus => ({
  store: 'dir /s',
  exists: true,
  pointer: pointer(),
  pointerErrors: [],
  hasPointer: true,
  runMatches: null,
  checkpoints: [
    { step: 100, pathInRepo: 'ckpt/checkpoint-100', fileCount: 2, totalBytes: 2000, hasManifest: false },
    { step: 200, pathInRepo: 'ckpt/checkpoint-200', fileCount: 3, totalBytes: 3000, hasManifest: true },
  ],
  hasFinal: false,
  treeBytes: 5000,
  storedBytes: null,
  pointed: { verified: true, problems: [] },
  lease: null,
  ...over,
});

describe('describePush', () => {
  it('a checkpoint: what landed, verified, the pointer, the wall time dimmed; then what was pruned', () => {
    expect(describePush('hub me/r', push(), style)).toEqual([
      'pushed ckpt/checkpoint-200 to hub me/r: 2 files, 3 kB, verified; latest.json → step 200  <dim>1.5 s</dim>',
    ]);
    const pruned = push({ prunedRemote: ['ckpt/checkpoint-100'], prunedLocal: ['/work/out/checkpoint-100'] });
    expect(describePush('hub me/r', pruned, style)[1]).toBe('pruned ckpt/checkpoint-100, out/checkpoint-100');
  });

  it('final/: the terminal pointer, no wall time; plain text by default', () => {
    expect(describePush('dir /s', push({ pathInRepo: 'final', step: 30, totalBytes: 512 }))).toEqual([
      'pushed final/ (step 30) to dir /s: 2 files, 512 B, verified; latest.json → final (terminal)',
    ]);
    expect(describePush('dir /s', push())[0]).toMatch(/latest\.json → step 200 {2}1500 ms$/);
  });
});

describe('describePull', () => {
  it('what was pulled where, every hash checked', () => {
    const r = pullResult('/work/p', 20, { fileCount: 4, totalBytes: 8000 });
    expect(describePull('ckpt/checkpoint-20', r, undefined, style)).toBe(
      'pulled ckpt/checkpoint-20 (step 20) into p: 4 files, 8 kB, every sha256 matches the manifest',
    );
    expect(describePull('final', r, '/elsewhere')).toBe(
      'pulled final (step 20) into /elsewhere: 4 files, 8000 B, every sha256 matches the manifest',
    );
  });
});

describe('describeStatus', () => {
  it('the pointer (verified as the store verifies), the checkpoints as a table, final/, lease, storage', () => {
    expect(describeStatus(status(), 'dir', style)).toEqual([
      '<b>dir /s</b>',
      '  latest.json  step 200 → ckpt/checkpoint-200, run r1, <g>verified (every byte read back and hashed)</g>, ' +
        'updated 2026-01-01T00:00:00Z',
      {
        table: [
          ['STEP', 'FOLDER', 'FILES', 'SIZE', 'MANIFEST'],
          ['100', 'ckpt/checkpoint-100', '2', '2 kB', '<r>missing</r>'],
          ['200', 'ckpt/checkpoint-200', '3', '3 kB', 'yes'],
        ],
      },
      '  final/       absent',
      '  lease        none',
    ]);
    const hub = describeStatus(
      status({
        pointer: pointer({ terminal: true, path_in_repo: 'final' }),
        checkpoints: [],
        hasFinal: true,
        storedBytes: 16000,
        lease: {
          format: 'soup-lease/1',
          id: 'L1',
          run: 'r1',
          host: 'h',
          pid: 7,
          since: 's',
          renewed_at: 'n',
          expires_at: 'e',
        },
      }),
      'hub',
      style,
    );
    expect(hub).toEqual([
      '<b>dir /s</b>',
      '  latest.json  step 200 → final (terminal), run r1, ' +
        '<g>verified (LFS files by oid and size; their bytes are hashed when pulled)</g>, updated 2026-01-01T00:00:00Z',
      '  final/       present',
      '  lease        L1: host h, pid 7, run r1, until e',
      '  storage      16 kB stored (history included), 5 kB in the checkpoints listed' +
        '<y>; 11 kB is only in older commits: pass --squash-history (hub.squash_history) to free it</y>',
    ]);
    // Old commits holding no more than the tree: no advice.
    expect(describeStatus(status({ storedBytes: 9000 }), 'hub', style).at(-1)).toBe(
      '  storage      9 kB stored (history included), 5 kB in the checkpoints listed',
    );
  });

  it('a pointer that does not verify, one that is invalid, none, and a store that does not exist', () => {
    const problems = ['a', 'b', 'c', 'd'];
    expect(describeStatus(status({ pointed: { verified: false, problems } }), 'dir', style)[1]).toBe(
      '  latest.json  step 200 → ckpt/checkpoint-200, run r1, <r>NOT verified: a; b; c</r>, ' +
        'updated 2026-01-01T00:00:00Z',
    );
    const invalid = status({ pointer: null, pointerErrors: ['step: must be integer', 'x'] });
    expect(describeStatus(invalid, 'dir', style)[1]).toBe('  latest.json  <r>invalid: step: must be integer; x</r>');
    expect(describeStatus(status({ pointer: null, hasPointer: false }), 'dir', style)[1]).toBe('  latest.json  none');
    expect(describeStatus(status({ exists: false }), 'dir', style)).toEqual([
      'dir /s: does not exist (a first push creates it)',
    ]);
  });
});

describe('describeList', () => {
  it('a table of the checkpoints, final/ last; or why there is none', () => {
    const list = {
      exists: true,
      checkpoints: [
        { step: 10, pathInRepo: 'ckpt/checkpoint-10', fileCount: 2, totalBytes: 1000, pushedAt: 't1' },
        { step: null, pathInRepo: 'final', fileCount: 2, totalBytes: 1000, pushedAt: null },
      ],
    };
    expect(describeList('dir /s', list, style)).toEqual([
      '<b>dir /s</b>',
      {
        table: [
          ['STEP', 'FOLDER', 'FILES', 'SIZE', 'PUSHED'],
          ['10', 'ckpt/checkpoint-10', '2', '1 kB', 't1'],
          ['final', 'final', '2', '1 kB', 'unknown'],
        ],
      },
    ]);
    expect(describeList('dir /s', { exists: true, checkpoints: [] })).toEqual(['dir /s: no checkpoints']);
    expect(describeList('dir /s', { exists: false, checkpoints: [] })).toEqual([
      'dir /s: does not exist (a first push creates it)',
    ]);
  });
});

describe('describeResume', () => {
  const pulled = pullResult('/tmp/x', 10);
  const resume = (over: Partial<Extract<PullResumeResult, { outcome: 'resume' }>> = {}): PullResumeResult => ({
    outcome: 'resume',
    step: 10,
    pathInRepo: 'ckpt/checkpoint-10',
    localDir: '/tmp/x',
    pulled,
    via: null,
    previousStep: null,
    repaired: false,
    skipped: [],
    ...over,
  });

  it('fresh, and complete (pulled into dest or not)', () => {
    expect(describeResume({ outcome: 'fresh', reason: 'repo-missing' }, null)).toEqual([
      'fresh: the repo does not exist yet; start from step 0',
    ]);
    expect(describeResume({ outcome: 'fresh', reason: 'no-checkpoint' }, null)).toEqual([
      'fresh: no checkpoint of this run; start from step 0',
    ]);
    const complete: PullResumeResult = { outcome: 'complete', step: 30, pathInRepo: 'final', pointer: pointer() };
    expect(describeResume(complete, null)).toEqual(['complete: final holds the final step 30; nothing to train']);
    expect(describeResume(complete, '/work/out/final', style)).toEqual([
      'complete: final holds the final step 30; nothing to train (pulled into out/final)',
    ]);
  });

  it('the checkpoint resumed from, after those passed over, and what became of latest.json', () => {
    expect(describeResume(resume(), null)).toEqual(['resume from ckpt/checkpoint-10 (step 10), pulls cleanly']);
    const skipped = [{ step: 20, pathInRepo: 'ckpt/checkpoint-20', problems: ['p1', 'p2', 'p3'] }];
    expect(describeResume(resume({ via: 'fallback', previousStep: 20, skipped }), '/work/d', style)).toEqual([
      'skipped ckpt/checkpoint-20: p1; p2',
      'resume from ckpt/checkpoint-10 (step 10) via fallback, pulled into d; latest.json still names step 20 ' +
        '(pass --repair to rewrite it)',
    ]);
    expect(describeResume(resume({ via: 'fallback', previousStep: 20, repaired: true }), null)).toEqual([
      'resume from ckpt/checkpoint-10 (step 10) via fallback, pulls cleanly, latest.json repaired',
    ]);
    expect(describeResume(resume({ via: 'no-pointer' }), null)).toEqual([
      'resume from ckpt/checkpoint-10 (step 10) via no-pointer, pulls cleanly',
    ]);
  });
});
