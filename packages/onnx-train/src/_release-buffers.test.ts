import { describe, expect, it } from 'vitest';
import { releaseBuffers } from './_release-buffers';

describe('releaseBuffers', () => {
  it('detaches whole buffers at once and leaves shared or foreign ones alone', () => {
    const own = new Float32Array(1024).fill(1);
    const shared = new ArrayBuffer(64);
    const view = new Float32Array(shared, 16, 4);
    const subarray = new Float32Array(32).subarray(0, 8);
    releaseBuffers([own, view, subarray, undefined, null]);
    expect(own.buffer.byteLength).toBe(0); // detached: its memory is released
    expect(own.length).toBe(0);
    expect(shared.byteLength).toBe(64);
    expect(subarray.length).toBe(8);
    releaseBuffers([own]); // already detached: a no-op
  });
});
