// A valid soup.yaml document (defaults filled by the schema) as a SoupConfig: camelCase, units in
// the names, paths resolved.
import pathModule from 'node:path';
import { parsePercent } from './_batch-config';
import { parseBytes } from './parse-bytes';
import { parseDuration } from './parse-duration';
import type { GradCkptSetting, SoupConfig, ValidateConfigOptions } from './soup-config';

export function toConfig(d: Record<string, unknown>, opts: ValidateConfigOptions): Omit<SoupConfig, 'lines'> {
  const { dirname, resolve } = pathModule;
  const dir = dirname(opts.file);
  const cwd = opts.cwd ?? process.cwd();
  const model = d.model as Record<string, number | boolean>;
  const data = d.data as Record<string, unknown>;
  const t = d.training as Record<string, unknown>;
  const hub = d.hub as Record<string, unknown>;
  const device = String(d.device);
  const [kind, id] = device.split(':') as ['cpu' | 'cuda', string | undefined];
  const budget = t.memory_budget;
  return {
    file: opts.file,
    base: String(d.base),
    model: {
      vocabSize: model.vocab_size as number,
      dModel: model.d_model as number,
      nHeads: model.n_heads as number,
      nLayers: model.n_layers as number,
      dFF: model.d_ff as number,
      tieEmbeddings: model.tie_embeddings as boolean,
    },
    data: {
      trainPath: resolve(dir, String(data.train)),
      valPath: data.val === null || data.val === undefined ? null : resolve(dir, String(data.val)),
      maxLength: data.max_length as number,
    },
    training: {
      steps: t.steps as number,
      batchSize: t.batch_size as number,
      microBatchSize: t.micro_batch_size as 'auto' | number,
      memoryHeadroom:
        t.memory_headroom === undefined || t.memory_headroom === null
          ? 0
          : typeof t.memory_headroom === 'number'
            ? t.memory_headroom
            : (parsePercent(String(t.memory_headroom)) ?? 0),
      autoBatchSizeStrategy: t.auto_batch_size_strategy as 'auto' | 'probe' | 'static',
      staticBatchSize: t.static_batch_size as number,
      lr: t.lr as number,
      scheduleSteps: typeof t.schedule_steps === 'number' ? t.schedule_steps : null,
      warmupSteps: t.warmup_steps as number,
      weightDecay: t.weight_decay as number,
      gradClip: t.grad_clip as number,
      seed: t.seed as number,
      valBatches: t.val_batches as number,
      threads: t.threads as number,
      memoryBudgetBytes:
        budget === undefined || budget === null ? null : (parseBytes(budget as string | number) ?? null),
      gradientCheckpointing: (t.gradient_checkpointing ?? false) as GradCkptSetting,
      activationOffloading: (t.activation_offloading ?? null) as 'cpu' | 'disk' | 'auto' | null,
      activationOffloadingDir: t.activation_offloading_dir ? resolve(cwd, String(t.activation_offloading_dir)) : null,
      quantization: t.quantization as 'none' | '4bit' | '8bit',
      loraR: (t.lora as { r: number }).r,
      timeLimitMs:
        t.time_limit === undefined || t.time_limit === null ? null : (parseDuration(String(t.time_limit)) ?? null),
    },
    device: { kind, id: id === undefined ? 0 : Number(id), spec: device },
    hub: {
      repo: (hub.repo as string | undefined) ?? null,
      repoType: hub.repo_type as 'model' | 'dataset',
      private: hub.private as boolean,
      pushEverySteps: (hub.push_every_steps as number | undefined) ?? null,
      keepLocal: hub.keep_local as number,
      keepRemote: hub.keep_remote === undefined ? 3 : (hub.keep_remote as number | null),
      squashHistory: hub.squash_history === false ? false : hub.squash_history === true ? true : 'auto',
      ...(hub.min_commit_interval === undefined
        ? {}
        : {
            minCommitIntervalMs:
              String(hub.min_commit_interval) === '0' ? 0 : parseDuration(String(hub.min_commit_interval)),
          }),
      ...(hub.lease_ttl === undefined ? {} : { leaseTtlMs: parseDuration(String(hub.lease_ttl)) ?? undefined }),
      endpoint: (hub.endpoint as string | undefined) ?? null,
    },
    output: resolve(cwd, String(d.output)),
  };
}
