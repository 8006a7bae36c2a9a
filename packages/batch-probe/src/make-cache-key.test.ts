import { createHash } from 'node:crypto';
import { expect, test } from 'vitest';
import { InvalidBatchOptionError } from './errors';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { TINY_GPT_KEY } from './_fixtures/tiny-gpt-key';

const vector: CacheKeyFields = { ...TINY_GPT_KEY };

test('the ARCHITECTURE.md test vector', () => {
  expect(makeCacheKey(vector)).toBe('dcaa220005fb718e145b37b330901237');
});

test(
  'the recipe: first 32 hex chars of ' + 'sha256("v2|base|max_length|quantization|lora_r|gpu_name|gpu_memory_gb")',
  () => {
    const fields: CacheKeyFields = {
      base: 'meta-llama/Llama-3.2-1B',
      maxLength: 2048,
      quantization: '4bit',
      loraR: 16,
      gpuName: 'NVIDIA H100 80GB HBM3',
      gpuMemoryGb: 80,
    };
    const raw = 'v2|meta-llama/Llama-3.2-1B|2048|4bit|16|NVIDIA H100 80GB HBM3|80';
    expect(makeCacheKey(fields)).toBe(createHash('sha256').update(raw).digest('hex').slice(0, 32));
    expect(makeCacheKey(fields)).toMatch(/^[0-9a-f]{32}$/);
  },
);

test('every field changes the key', () => {
  const variants: CacheKeyFields[] = [
    { ...vector, base: 'soup/other' },
    { ...vector, maxLength: 256 },
    { ...vector, quantization: '4bit' },
    { ...vector, loraR: 8 },
    { ...vector, gpuName: 'NVIDIA H200' },
    { ...vector, gpuMemoryGb: 24 },
  ];
  const keys = new Set([makeCacheKey(vector), ...variants.map(makeCacheKey)]);
  expect(keys.size).toBe(7);
});

test('non-ASCII fields hash as UTF-8, like Python', () => {
  const raw = 'v2|modèle|128|none|0|cpu|23';
  expect(makeCacheKey({ ...vector, base: 'modèle' })).toBe(
    createHash('sha256').update(Buffer.from(raw, 'utf8')).digest('hex').slice(0, 32),
  );
});

test.each([
  ['maxLength', { maxLength: true }],
  ['maxLength', { maxLength: 128.5 }],
  ['maxLength', { maxLength: '128' }],
  ['loraR', { loraR: false }],
  ['gpuMemoryGb', { gpuMemoryGb: 23.5 }],
  ['base', { base: 42 }],
  ['gpuName', { gpuName: undefined }],
  ['quantization', { quantization: null }],
])('rejects a bad %s', (field, patch) => {
  const err = (() => {
    try {
      makeCacheKey({ ...vector, ...patch } as unknown as CacheKeyFields);
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  expect(err).toBeInstanceOf(InvalidBatchOptionError);
  expect((err as InvalidBatchOptionError).field).toBe(field);
});
