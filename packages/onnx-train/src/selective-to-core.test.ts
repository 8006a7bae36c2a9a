import { planCheckpoint } from '@soup/grad-ckpt';
import { describe, expect, it } from 'vitest';
import { moduleNames } from './module-names';
import { selectiveToCore } from './selective-to-core';

describe('selectiveToCore', () => {
  it("turns planCheckpoint's selective attention modules into attention-core recompute", () => {
    const planned = planCheckpoint({ moduleNames: moduleNames({ nLayers: 3 }), granularity: 'selective' });
    expect(planned).toEqual(['h.0.attn', 'h.1.attn', 'h.2.attn']);
    expect(selectiveToCore({ moduleNames: planned })).toEqual(['h.0.attn.core', 'h.1.attn.core', 'h.2.attn.core']);
  });

  it('passes other names through, in order', () => {
    expect(selectiveToCore({ moduleNames: ['h.1', 'h.0.attn', 'h.0.mlp', 'h.2.attn.core', 'h.10.attn'] })).toEqual([
      'h.1',
      'h.0.attn.core',
      'h.0.mlp',
      'h.2.attn.core',
      'h.10.attn.core',
    ]);
    expect(selectiveToCore({ moduleNames: [] })).toEqual([]);
  });
});
