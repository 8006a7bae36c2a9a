import { describe, expect, it } from 'vitest';
import { PUSH_PROGRESS_TOTAL, trackPushProgress } from './push-progress';

describe('trackPushProgress', () => {
  it('walks a push from 0 to the total, counting the uploads that landed', () => {
    const track = trackPushProgress();
    const phases = ['hash', 'upload', 'upload', 'uploaded', 'verified', 'pointer', 'pointed', 'prune', 'done'] as const;
    expect(phases.map((phase) => track({ phase }))).toEqual([
      { done: 0, status: 'hashing' },
      { done: 1, status: 'uploading (1 landed)' },
      { done: 1, status: 'uploading (2 landed)' },
      { done: 2, status: 'verifying from the store' },
      { done: 3, status: 'moving latest.json' },
      { done: 3, status: 'moving latest.json' },
      { done: 4, status: 'pruning' },
      { done: 4, status: 'pruning' },
      { done: PUSH_PROGRESS_TOTAL, status: 'done' },
    ]);
  });
  it('counts the uploads of each push apart', () => {
    trackPushProgress()({ phase: 'upload' });
    expect(trackPushProgress()({ phase: 'upload' }).status).toBe('uploading (1 landed)');
  });
});
