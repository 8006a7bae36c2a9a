// A trainer under supervise() with a global batch G: each session's micro-batch m comes from the caller's probe
// (the batch cache first), and a mid-run out-of-memory steps m down to the next divisor and lowers the cache entry
// m came from, so the next session does not try the size that failed again.
import type { CacheLocationOptions, LowerCacheEntryResult } from '@soup/batch-probe';
import type { OomStepDown, SuperviseOptions } from '@soup/supervisor';
import { stepDownOptions } from './step-down-options';
import { lowerProbedBatch, type ProbedBatch, type TrainerMicro } from './trainer-batch';

/** What a step-down did to the batch cache entry `probed` came from (lowered or not, and why) and its note. */
export interface MicroCacheLowered extends LowerCacheEntryResult {
  probed: ProbedBatch;
  stepDown: OomStepDown;
  note: string;
  /** `batch cache entry <key> lowered <from> → <to>: <note>`, or `… not lowered: <why>`. */
  line: string;
}

/** Options of {@link microSuperviseOptions}. */
export interface MicroSuperviseOptions extends CacheLocationOptions {
  micro: TrainerMicro;
  /** This session's micro-batch (a divisor of G / worldSize), as the caller finds it: the cache first, else a probe. */
  probe(micro: TrainerMicro): Promise<ProbedBatch>;
  /** Out-of-memory step-downs a session may take. */
  maxOomRetries: number;
  /** False (`--no-cache`): a step-down leaves the batch cache as it is. */
  cache: boolean;
  /** The micro-batch this session runs, once found. */
  onMicroBatch?: (probed: ProbedBatch) => void;
  /** After a step-down, what became of the cache entry the micro-batch came from. */
  onCacheLowered?: (r: MicroCacheLowered) => void;
}

/** The supervise() options of a global batch: m resolved per session, the judge, the step-down, the cache lowered. */
export function microSuperviseOptions(o: MicroSuperviseOptions): Partial<SuperviseOptions> {
  const { micro } = o;
  const { globalBatchSize, worldSize } = micro;
  let probed: ProbedBatch | null = null;
  return {
    async resolveMicroBatchSize() {
      const p = await o.probe({ globalBatchSize, worldSize, headroom: micro.headroom });
      probed = p;
      o.onMicroBatch?.(p);
      return { microBatchSize: p.batchSize, source: p.source, ...(p.levers ? { levers: p.levers } : {}) };
    },
    ...stepDownOptions({
      globalBatchSize,
      worldSize,
      maxOomRetries: o.maxOomRetries,
      async onOomStepDown(s: OomStepDown) {
        if (!o.cache || probed === null) return;
        const { env, cwd } = o;
        const { step, from, to } = s;
        const r = await lowerProbedBatch({ env, cwd, probed, globalBatchSize, worldSize, step, from, to });
        const line = r.lowered
          ? `batch cache entry ${probed.cacheKey} lowered ${r.previous ?? '(none)'} → ${to}: ${r.note}`
          : `batch cache entry ${probed.cacheKey} not lowered: ${r.why ?? 'unknown'}`;
        o.onCacheLowered?.({ ...r, probed, stepDown: s, line });
      },
    }),
  };
}
