// The one sentence of a batch search's answer, for every command that searches (soup probe, soup run, soup plan and
// soup train): the size (or the micro-batch m × a = G), then where it came from: the cache (its key, how it was
// found, a ceiling that capped it) or trials on this device (how many, what judged them, whether it was cached).
import { formatBytes, formatMicroBatch } from '@soup/batch-probe';
import type { BatchResolution } from './resolve-batch';
import type { TrainerMicro } from './trainer-batch';

/** Options of {@link describeResolution}. */
export interface DescribeResolutionOptions {
  /** The device the trials ran on: a probed answer names it. */
  gpuName: string;
  /** With a global batch: the answer is a micro-batch, said as `m × a = G` (`× N ranks`). @default null */
  micro?: Pick<TrainerMicro, 'globalBatchSize' | 'worldSize'> | null;
  /**
   * How far the answer is proven, where the caller knows more than the cache's provenance (a search not cached).
   * @default the provenance's bound
   */
  bound?: 'exact' | 'capped' | 'unproven' | null;
  /** What a capped answer's ceiling is, in its parenthesis. @default '--ceiling' */
  ceilingName?: string;
  /**
   * Name soup probe's and soup run's flags: `--refresh to probe again` after a cached answer, `--budget` and
   * `--cache-exceptions-only` after one that only a failure could have refused. @default false
   */
  flagHints?: boolean;
  /** Styles the size (e.g. bold). @default none */
  style?: { bold?: (text: string) => string };
}

/**
 * `batch size 8 (from the cache, key …; exact, judged by …, budget …, ceiling 32)` or
 * `micro-batch 2 × 4 = 8 fits (probed on <device>, 3 trials, judged by …, cached as …)`, with the clauses that
 * apply: a cached answer above the ceiling, a capped one, why it was not cached, a flat peak.
 */
export function describeResolution(r: BatchResolution, o: DescribeResolutionOptions): string {
  const m = r.batchSize;
  const micro = o.micro ?? null;
  const size = micro
    ? formatMicroBatch({
        microBatchSize: m,
        accumulation: micro.globalBatchSize / micro.worldSize / m,
        worldSize: micro.worldSize,
      })
    : String(m);
  const bound = o.bound === undefined ? (r.provenance?.bound ?? null) : o.bound;
  const hints = o.flagHints === true;
  const capped =
    bound === 'capped' ? `capped: ${m} is the ceiling of the search (${o.ceilingName ?? '--ceiling'})` : null;
  const clauses =
    r.source === 'cache'
      ? [
          `from the cache, key ${r.cacheKey}`,
          provenanceOf(r, bound),
          r.cappedFrom !== null ? `its ${r.cappedFrom} fits, so the ceiling does` : null,
          capped,
          hints ? '--refresh to probe again' : null,
        ]
      : [
          r.source === 'static' ? 'the static estimate, not probed' : probedOn(r, o.gpuName, bound, hints),
          capped,
          r.flatPeak ? 'its peak did not grow with the size: see the warning' : null,
        ];
  // A searched answer is the largest size its trials saw fit: the line says so in its first words.
  const fits = r.source === 'probe' ? ' fits' : '';
  return `${micro ? 'micro-batch' : 'batch size'} ${o.style?.bold?.(size) ?? size}${fits} (${clauses
    .filter((c) => c !== null)
    .join('; ')})`;
}

/** A cached answer's provenance: its bound (a capped one says so in its own clause), judge, budget and ceiling. */
function provenanceOf(r: BatchResolution, bound: string | null): string {
  const p = r.provenance;
  if (p === null) return 'no provenance: written by the Python tool or an older soup';
  return (
    `${bound === 'capped' ? '' : `${p.bound}, `}judged by ${p.measurement}, budget ` +
    `${p.budgetBytes === null ? 'the device' : formatBytes(p.budgetBytes)}, ceiling ${p.ceiling}`
  );
}

/** A searched answer: the device, the trials, what judged the chosen one, and whether (and how) it was cached. */
function probedOn(r: BatchResolution, gpuName: string, bound: string | null, hints: boolean): string {
  const n = r.trials.length;
  const judged = r.chosen?.measurement ? `, judged by ${r.chosen.measurement}` : '';
  const cached = r.saved
    ? `cached as ${r.cacheKey}${bound === 'unproven' ? ' (unproven)' : ''}`
    : r.notSavedReason === null
      ? 'not cached'
      : hints && r.chosen?.measurement === 'exceptions-only' && r.keyUnknown === null
        ? 'not cached: no trial measured a peak, so only a failure could have refused this size; pass --budget to ' +
          'measure, or --cache-exceptions-only to cache it anyway'
        : `not cached: ${r.notSavedReason}`;
  return `probed on ${gpuName}, ${n} trial${n === 1 ? '' : 's'}${judged}, ${cached}`;
}
