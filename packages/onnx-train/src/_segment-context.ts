// What the parts of a segmented step share: the runnable segments, the step's parameter state,
// and the three helpers every part uses (parameter feeds, a segment run with its error wording).
import ort from 'onnxruntime-node';
import type { SavedSlot } from './_segments';
import type { FloatDType } from './_graph';
import { TrainStepError } from './errors';
import type { GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { ParamSpec } from './parameter-specs';

export type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;
export type Feeds = Record<string, ort.Tensor>;

/** A runnable segment: its branch of the segments session (see `openSegments`). */
export interface Segment {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Feeds): Promise<Record<string, ort.Tensor>>;
}

export interface Unit {
  /** `h.<i>.attn` or `h.<i>.mlp`. */
  name: string;
  /** `h.<i>.`: put in front of the block-relative names of the unit's segments. */
  prefix: string;
  forward: Segment;
  backward: Segment;
  saved: SavedSlot[];
}

export interface Sessions {
  embedForward: Segment;
  embedBackward: Segment;
  head: Segment;
  /** Forward order; units of one kind share their segments. */
  units: Unit[];
  gradNorm: Segment;
  adamwBlock: Segment;
  adamwRest: Segment;
}

/** The step's graphs and state as the pass and the optimizer see them. */
export interface SegmentContext {
  readonly spec: GptSpec;
  readonly dtype: FloatDType;
  readonly params: readonly ParamSpec[];
  readonly sessions: Sessions;
  /** Parameters and AdamW moments by name (the step owns them). */
  readonly state: Map<string, FloatArray>;
}

/**
 * `extra` plus every parameter `session` reads; block sessions name their parameters relative
 * to the block, so `prefix` (`h.<i>.`) is put back in front.
 */
export function segmentFeeds(ctx: SegmentContext, session: Segment, extra: Feeds, prefix = ''): Feeds {
  const feeds: Feeds = { ...extra };
  for (const name of session.inputNames) {
    if (name in feeds) continue;
    const p = paramSpecOf(ctx, prefix + name);
    feeds[name] = new ort.Tensor(ctx.dtype, ctx.state.get(p.name)!, p.shape);
  }
  return feeds;
}

export function paramSpecOf(ctx: SegmentContext, name: string): ParamSpec {
  const p = ctx.params.find((q) => q.name === name);
  if (!p) throw new Error(`segment input ${name} is not a parameter`);
  return p;
}

/** Runs a segment; a failure becomes a `TrainStepError` naming the batch size and the segment. */
export async function runSegment(
  segment: Segment,
  feeds: Feeds,
  batchSize: number,
  what: string,
): Promise<Record<string, ort.Tensor>> {
  try {
    return await segment.run(feeds);
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    throw new TrainStepError(`training step failed at batch size ${batchSize} (segment ${what}): ${message}`, {
      cause: err,
    });
  }
}
