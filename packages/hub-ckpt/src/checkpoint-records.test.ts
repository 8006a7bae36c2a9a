import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { checkpointStatus } from './checkpoint-status';
import { pullRecord, pushRecord, resumeRecord, statusRecord } from './checkpoint-records';
import { pullCheckpoint } from './pull-checkpoint';
import { pullResume } from './pull-resume';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore } from './_test-helpers';

const RUN = 'run-rec';

describe('checkpoint records', () => {
  it('push, pull, status and resume as snake_case records of their results', async () => {
    const t = await makeTestStore('dir');
    const pushed = [];
    for (const step of [10, 20, 30]) {
      const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run: RUN });
      pushed.push(await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepLocal: 1, keepRemote: 2 }));
    }
    const r = pushed[2]!;
    expect(pushRecord(r)).toEqual({
      step: 30,
      path_in_repo: 'ckpt/checkpoint-30',
      manifest_sha256: r.manifestSha256,
      files: r.fileCount,
      bytes: r.totalBytes,
      commits: r.commits,
      pruned_remote: ['ckpt/checkpoint-10'],
      pruned_local: [join(t.work, 'out', 'checkpoint-20')],
      ms: Math.round(r.timings.totalMs),
    });

    const st = await checkpointStatus({ store: t.reopen(), verify: true });
    expect(statusRecord(st)).toEqual({
      store: st.store,
      exists: true,
      pointer: st.pointer,
      pointer_errors: [],
      pointed_verified: true,
      pointed_problems: [],
      checkpoints: [20, 30].map((step) => ({
        step,
        path_in_repo: `ckpt/checkpoint-${step}`,
        files: r.fileCount,
        // Counted as the push counts them: manifest.json aside (tree_bytes holds every byte, manifests too).
        bytes: r.totalBytes,
        has_manifest: true,
      })),
      has_final: false,
      tree_bytes: st.treeBytes,
      stored_bytes: null,
      lease: null,
    });
    const unverified = statusRecord(await checkpointStatus({ store: t.reopen() }));
    expect([unverified.pointed_verified, unverified.pointed_problems]).toEqual([null, []]);

    const pulled = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'ckpt/checkpoint-30',
      dir: join(t.work, 'p'),
    });
    expect(pullRecord('ckpt/checkpoint-30', pulled)).toEqual({
      path_in_repo: 'ckpt/checkpoint-30',
      dir: join(t.work, 'p'),
      step: 30,
      files: r.fileCount,
      bytes: r.totalBytes,
      manifest_sha256: r.manifestSha256,
    });
    expect(pullRecord('ckpt/checkpoint-30', pulled, '/elsewhere').dir).toBe('/elsewhere');

    const resumed = await pullResume({ store: t.reopen(), run: RUN, dir: join(t.work, 'r') });
    const record = resumeRecord(resumed, '/x');
    expect(record).toEqual({
      outcome: 'resume',
      step: 30,
      path_in_repo: 'ckpt/checkpoint-30',
      dir: '/x',
      via: null,
      previous_step: null,
      repaired: false,
      skipped: [],
    });
    // The key order is the RESUME_JSON line's: a trainer may read it as text.
    expect(Object.keys(record)).toEqual([
      'outcome',
      'step',
      'path_in_repo',
      'dir',
      'via',
      'previous_step',
      'repaired',
      'skipped',
    ]);
    expect(resumeRecord({ outcome: 'fresh', reason: 'repo-missing' }, '/ignored')).toEqual({
      outcome: 'fresh',
      reason: 'repo-missing',
      step: 0,
      path_in_repo: null,
      dir: null,
    });
    const pointer = st.pointer!;
    expect(resumeRecord({ outcome: 'complete', step: 30, pathInRepo: 'final', pointer }, null)).toEqual({
      outcome: 'complete',
      step: 30,
      path_in_repo: 'final',
      dir: null,
    });
  });
});
