import { describe, expect, it } from 'vitest';
import { cacheEntryRecord, isCacheKey } from './cache-entry-record';
import { makeCacheKey } from './make-cache-key';
import { TINY_GPT_KEY } from './_fixtures/tiny-gpt-key';

describe('cacheEntryRecord', () => {
  it('flattens an entry and its provenance into snake_case, with null where a field was not recorded', () => {
    const provenance = {
      batchSize: 8,
      base: 'soup/tiny-gpt',
      maxLength: 128,
      gpuName: 'cpu',
      budgetBytes: null,
      ceiling: 64,
      bound: 'exact' as const,
      measurement: 'peak-rss',
      savedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(cacheEntryRecord({ key: 'k', batchSize: 8, provenance })).toEqual({
      key: 'k',
      batch_size: 8,
      provenance: {
        base: 'soup/tiny-gpt',
        max_length: 128,
        quantization: null,
        lora_r: null,
        gpu: 'cpu',
        gpu_memory_gb: null,
        budget_bytes: null,
        ceiling: 64,
        bound: 'exact',
        measurement: 'peak-rss',
        saved_at: '2026-01-01T00:00:00.000Z',
        note: null,
        files: null,
      },
    });
    const full = {
      ...provenance,
      quantization: '4bit',
      loraR: 16,
      gpuMemoryGb: 80,
      budgetBytes: 1024,
      note: 'n',
      files: { 'train.py': 'aaaaaaaaaaaa', 'model.py': 'bbbbbbbbbbbb' },
    };
    expect(cacheEntryRecord({ key: 'k', batchSize: 8, provenance: full }).provenance).toMatchObject({
      quantization: '4bit',
      lora_r: 16,
      gpu_memory_gb: 80,
      budget_bytes: 1024,
      note: 'n',
      files: { 'train.py': 'aaaaaaaaaaaa', 'model.py': 'bbbbbbbbbbbb' },
    });
  });
  it('gives null provenance to an entry the Python tool wrote', () => {
    expect(cacheEntryRecord({ key: 'k', batchSize: 4 })).toEqual({ key: 'k', batch_size: 4, provenance: null });
  });
});

describe('isCacheKey', () => {
  it('accepts what makeCacheKey makes and nothing else', () => {
    const key = makeCacheKey(TINY_GPT_KEY);
    expect(isCacheKey(key)).toBe(true);
    for (const bad of ['', key.toUpperCase(), key.slice(1), `${key}0`, `${key.slice(1)}g`])
      expect(isCacheKey(bad)).toBe(false);
  });
});
