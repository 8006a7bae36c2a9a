// soup probe's sources besides a trainer command: soup.yaml's model (onnx-train's step, as soup
// train would train it) and any ONNX model (one session.run on a synthetic batch).
import { type ChildProbeFn, createOrtProbe, createTrainStepProbe, type WorkerProbeOptions } from '@soup/cuda-probe';
import { ConfigError, type SoupConfig } from '@soup/config';
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { cacheBaseOf, gptSpecOf, type OffloadPlan, offloadIssues, offloadOf, type TierPlan } from './config-plan';

/**
 * The step soup train would train, for `tier`: an offload it would refuse is refused here too (ConfigError naming
 * `file`); an accepted one probes onnx-train's segmented step through the same activation store.
 */
export function configStepProbe(
  config: SoupConfig,
  tier: TierPlan,
  o: WorkerProbeOptions & { cwd: string; file: string },
): { probe: ChildProbeFn; base: string; offload: OffloadPlan | null } {
  const { file, ...common } = o;
  const refused = offloadIssues(config, o.cwd).errors;
  if (refused.length > 0) throw new ConfigError({ file, issues: refused });
  const offload = offloadOf(config, o.cwd);
  const probe = createTrainStepProbe({
    ...common,
    spec: gptSpecOf(config),
    plan: tier.recompute,
    ...(offload
      ? { offload: { target: offload.target, ...(offload.saveDir ? { saveDir: offload.saveDir } : {}) } }
      : {}),
    ...(config.training.threads > 0 ? { intraOpNumThreads: config.training.threads } : {}),
  });
  return { probe, base: cacheBaseOf(config, tier.recompute), offload };
}

/** Any ONNX model (`bytes`: the file's content, hashed into the cache base unless `base` is given). */
export function onnxModelProbe(
  o: WorkerProbeOptions & {
    model: string;
    bytes: Uint8Array;
    maxLength: number;
    vocabSize: number;
    base?: string | undefined;
  },
): { probe: ChildProbeFn; base: string } {
  const { bytes, base, ...options } = o;
  return {
    probe: createOrtProbe(options),
    base: base ?? `onnx:${basename(o.model)}@${createHash('sha256').update(bytes).digest('hex').slice(0, 12)}`,
  };
}
