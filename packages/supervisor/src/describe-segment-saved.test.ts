import { describe, expect, it } from 'vitest';
import { describeSegmentSaved } from './describe-segment-saved';

describe("a segment's closing sentence", () => {
  it('names the reason and the step the store points at, or that the next session starts over', () => {
    expect(describeSegmentSaved('time limit 5.0s', 8, 'dir ckpt')).toBe(
      'segment saved (time limit 5.0s): step 8 is saved in dir ckpt; run the same command again to continue',
    );
    expect(describeSegmentSaved('signal SIGTERM', null, 'dir ckpt')).toBe(
      'segment saved (signal SIGTERM): no complete checkpoint yet: the next session starts from the beginning; run ' +
        'the same command again to continue',
    );
  });
});
