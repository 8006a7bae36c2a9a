import { createHash } from 'node:crypto';
import type { SoupConfig } from './validate-config';

/** Options of {@link runFingerprint}. */
export interface RunFingerprintOptions {
  config: SoupConfig;
  /** sha256 (hex) of the training text. */
  trainSha256: string;
  /** sha256 (hex) of the validation text, or null. */
  valSha256: string | null;
}

/**
 * The run's identity in the checkpoint store (`run` of latest.json and every manifest): a hash of
 * everything that decides the numbers a run produces — the model, the data bytes, the sequence
 * length, the horizon (`training.steps`), the configured batch size, the optimizer settings and
 * the seeds. Resuming under a different fingerprint is refused as stale, so changing the horizon
 * (or the data, or the learning rate) starts a new run instead of silently mixing two.
 *
 * Memory levers (gradient checkpointing, offload, the device, threads) and the checkpoint
 * cadence are not part of it: they change how a step runs, not what it computes. `batch_size:
 * auto` enters as "auto": the size it resolves to is recorded in the first checkpoint and reused
 * by every later session of the run.
 */
export function runFingerprint(opts: RunFingerprintOptions): string {
  const { config: c } = opts;
  const identity = {
    v: 1,
    base: c.base,
    model: c.model,
    data: { train: opts.trainSha256, val: opts.valSha256, max_length: c.data.maxLength },
    training: {
      steps: c.training.steps,
      batch_size: c.training.batchSize === 'auto' ? `auto:${c.training.autoBatchSizeStrategy}:${c.training.staticBatchSize}` : c.training.batchSize,
      lr: c.training.lr,
      warmup_steps: c.training.warmupSteps,
      weight_decay: c.training.weightDecay,
      grad_clip: c.training.gradClip,
      seed: c.training.seed,
    },
  };
  const hash = createHash('sha256').update(canonical(identity)).digest('hex');
  return `soup-${hash.slice(0, 20)}`;
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}
