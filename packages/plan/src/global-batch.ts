// A global batch G shared by N ranks (--global-batch-size, --world-size, --headroom): each rank
// answers the micro-batch m, a divisor of G / N, and accumulates a = G / (m × N). The flags are
// checked here for soup run and soup probe --exec (a validator: errors name the flags, the caller
// refuses the first).
import { formatMicroBatch } from '@soup/batch-probe';
import type { TrainerMicro } from './trainer-batch';

/** The global batch flags as given. */
export interface GlobalBatchFlags {
  globalBatchSize?: number | undefined;
  worldSize?: number | undefined;
  headroom?: number | undefined;
}

/** What an answer m means under G: its shape (`m × a = G`, `× N` over ranks) and the fields a result carries. */
export interface GlobalBatch extends TrainerMicro {
  perRank: number;
  shape(m: number): string;
  fields(m: number): {
    micro_batch_size: number;
    grad_accum: number;
    global_batch_size: number;
    world_size: number;
    micro_batch: string;
  };
}

/** A global batch checked, or null (none given), and why it is refused (the first error is the answer). */
export interface GlobalBatchCheck {
  batch: GlobalBatch | null;
  errors: string[];
}

/** soup run's global batch, checked against its other flags and the trainer command's placeholders (`argv`). */
export function runGlobalBatch(
  o: GlobalBatchFlags & {
    argv: readonly string[];
    batchSize?: number | string | undefined;
    probe?: string | undefined;
  },
): GlobalBatchCheck {
  const G = o.globalBatchSize;
  if (G === undefined) {
    const used = ['{micro_batch_size}', '{grad_accum}'].find((name) => o.argv.some((a) => a.includes(name)));
    if (used !== undefined)
      return refuse(
        `the trainer command uses ${used}: pass --global-batch-size G (samples per optimizer step) and --probe ` +
          `"<one-step command with {micro_batch_size}>"`,
      );
    if (o.worldSize !== undefined) return refuse('--world-size needs --global-batch-size G: a = G / (m × world size)');
    if (o.headroom !== undefined)
      return refuse('--headroom applies to the micro-batch probe: pass --global-batch-size G (and --probe)');
    return { batch: null, errors: [] };
  }
  if (o.batchSize !== undefined)
    return refuse(
      `--batch-size and --global-batch-size together: with a global batch, {batch_size} is the micro-batch soup ` +
        `picks for this device; drop --batch-size`,
    );
  const check = globalBatchOf(G, o);
  if (check.errors.length > 0 || o.probe !== undefined) return check;
  return refuse(
    '--global-batch-size needs --probe "<the trainer\'s one-step command with {micro_batch_size}>": each ' +
      'session finds the micro-batch that fits its device (the batch cache first)',
  );
}

/** soup probe's global batch: only for a trainer command (`mode` exec). */
export function probeGlobalBatch(o: GlobalBatchFlags & { mode: string }): GlobalBatchCheck {
  const G = o.globalBatchSize;
  if (G === undefined) {
    if (o.worldSize !== undefined || o.headroom !== undefined)
      return refuse(
        `${o.worldSize !== undefined ? '--world-size' : '--headroom'} needs --global-batch-size G: the probe ` +
          `then answers the micro-batch m, a divisor of G / world size`,
      );
    return { batch: null, errors: [] };
  }
  if (o.mode !== 'exec')
    return refuse(
      '--global-batch-size applies to soup probe --exec (soup train reads training.batch_size as G from soup.yaml)',
    );
  return globalBatchOf(G, o);
}

/** G over N ranks (N defaults to 1): every rank must get G / N samples. */
function globalBatchOf(G: number, o: GlobalBatchFlags): GlobalBatchCheck {
  const N = o.worldSize ?? 1;
  if (G % N !== 0)
    return refuse(
      `--global-batch-size ${G} is not a multiple of --world-size ${N}: every rank must get G / N samples per ` +
        `step; pick G = ${Math.ceil(G / N) * N}`,
    );
  const perRank = G / N;
  const shape = (m: number): string => formatMicroBatch({ microBatchSize: m, accumulation: perRank / m, worldSize: N });
  const batch: GlobalBatch = {
    globalBatchSize: G,
    worldSize: N,
    perRank,
    headroom: o.headroom ?? 0,
    shape,
    fields: (m) => ({
      micro_batch_size: m,
      grad_accum: perRank / m,
      global_batch_size: G,
      world_size: N,
      micro_batch: shape(m),
    }),
  };
  return { batch, errors: [] };
}

function refuse(error: string): GlobalBatchCheck {
  return { batch: null, errors: [error] };
}
