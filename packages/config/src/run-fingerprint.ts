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

/** What a run fingerprint covers, by soup.yaml field (written to each checkpoint as soup_run.json). */
export type RunIdentity = Record<string, string | number | boolean | null>;

/** A run's fingerprint and the fields it was made from. */
export interface RunFingerprint {
  /** `soup-<20 hex>`: the `run` of latest.json and of every manifest. */
  run: string;
  identity: RunIdentity;
}

/**
 * The run's identity in the checkpoint store: a hash of everything that decides the numbers a
 * run produces — the model, the data bytes, the sequence length, the schedule's horizon (`training.schedule_steps`,
 * else `training.steps`),
 * the configured batch size, the optimizer settings and the seed. Resuming under a different
 * fingerprint is refused as stale, so changing the horizon (or the data, or the learning rate)
 * starts a new run instead of silently mixing two.
 *
 * Memory levers (gradient checkpointing, offload, device, threads) and the checkpoint cadence are
 * not part of it: they change how a step runs, not what it computes. `batch_size` is the global
 * batch G and enters as it is; `micro_batch_size` (m) does not: each session may pick its own m
 * for its device, and the accumulation a = G / m keeps the optimizer's batch.
 */
export function runFingerprint(opts: RunFingerprintOptions): RunFingerprint {
  const { config: c } = opts;
  const t = c.training;
  const identity: RunIdentity = {
    base: c.base,
    'model.vocab_size': c.model.vocabSize,
    'model.d_model': c.model.dModel,
    'model.n_heads': c.model.nHeads,
    'model.n_layers': c.model.nLayers,
    'model.d_ff': c.model.dFF,
    'model.tie_embeddings': c.model.tieEmbeddings,
    'data.train (sha256)': opts.trainSha256,
    'data.val (sha256)': opts.valSha256,
    'data.max_length': c.data.maxLength,
    // The schedule's horizon under the key it always had: a run extended past its steps on the same schedule
    // (`schedule_steps`) is the same run.
    'training.steps': t.scheduleSteps ?? t.steps,
    // G, the global batch; the micro-batch m is each session's own (memory, not the model).
    'training.batch_size': t.batchSize,
    'training.lr': t.lr,
    'training.warmup_steps': t.warmupSteps,
    'training.weight_decay': t.weightDecay,
    'training.grad_clip': t.gradClip,
    'training.seed': t.seed,
  };
  const canonical = JSON.stringify(
    Object.keys(identity)
      .sort()
      .map((k) => [k, identity[k]]),
  );
  return {
    run: `soup-${createHash('sha256').update(`soup-run/1\n${canonical}`).digest('hex').slice(0, 20)}`,
    identity,
  };
}
