import { createHash } from 'node:crypto';
import { integer, string } from './_validate';

/** The fields of a batch cache key: what makes one batch size answer differ from another. */
export interface CacheKeyFields {
  /** Base model id, e.g. `soup/tiny-gpt` or `meta-llama/Llama-3.2-1B`. */
  base: string;
  /** Sequence length of the training batches (tokens). */
  maxLength: number;
  /** Quantization, e.g. `none`, `4bit`, `8bit` (written as given). */
  quantization: string;
  /** LoRA rank, 0 for full fine-tuning. */
  loraR: number;
  /** Device name, e.g. `NVIDIA H100 80GB HBM3` or `cpu`. */
  gpuName: string;
  /** Device memory in whole GB. */
  gpuMemoryGb: number;
}

/** Version tag folded into every key: `v2` = the probe gates on the measured peak, not only on OOM. */
export const CACHE_KEY_VERSION = 'v2';

/**
 * The cache key, byte-compatible with the Python Soup CLI: the first 32 hex characters of the
 * sha256 of `v2|base|max_length|quantization|lora_r|gpu_name|gpu_memory_gb` (UTF-8).
 * `maxLength`, `loraR` and `gpuMemoryGb` must be integers (booleans and floats are rejected with
 * {@link InvalidBatchOptionError}), the other fields strings.
 *
 * @example makeCacheKey({base: 'soup/tiny-gpt', maxLength: 128, quantization: 'none', loraR: 0, gpuName: 'cpu',
 * gpuMemoryGb: 23})
 * // 'dcaa220005fb718e145b37b330901237'
 */
export function makeCacheKey(fields: CacheKeyFields): string {
  const raw = [
    CACHE_KEY_VERSION,
    string('base', fields.base),
    String(integer('maxLength', fields.maxLength)),
    string('quantization', fields.quantization),
    String(integer('loraR', fields.loraR)),
    string('gpuName', fields.gpuName),
    String(integer('gpuMemoryGb', fields.gpuMemoryGb)),
  ].join('|');
  return createHash('sha256').update(raw, 'utf8').digest('hex').slice(0, 32);
}
