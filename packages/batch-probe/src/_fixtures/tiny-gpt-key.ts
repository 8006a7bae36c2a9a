import type { CacheKeyFields } from '../make-cache-key';

/** The key fields of the tests' tiny GPT on the CPU machine. */
export const TINY_GPT_KEY: CacheKeyFields = {
  base: 'soup/tiny-gpt',
  maxLength: 128,
  quantization: 'none',
  loraR: 0,
  gpuName: 'cpu',
  gpuMemoryGb: 23,
};
