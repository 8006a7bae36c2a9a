// The sessions of a segmented step: every segment model (embedding, half-block forwards and
// backwards, head, gradient norm, AdamW groups) built and opened behind one switch session.
import ort from 'onnxruntime-node';
import type { FloatDType } from './_graph';
import { OnnxDataType } from './_proto';
import type { Feeds, Segment, Session, Sessions, Unit } from './_segment-context';
import {
  blockUnits,
  buildAdamWGroup,
  buildEmbedBackward,
  buildEmbedForward,
  buildGradNorm,
  buildHead,
  buildUnitSegments,
  type SavedSlot,
  type SegmentModel,
  type UnitKind,
} from './_segments';
import { buildSwitchModel } from './_switch-model';
import { createTrainingSession } from './_training-session';
import type { ResolvedAdamW } from './adamw-options';
import type { GptSpec } from './gpt-spec';
import type { SegmentedTrainStepOptions } from './segmented-step-types';

/**
 * ORT's intra-op threads spin for a while after each run by default. A segmented step makes two
 * dozen runs with JavaScript work between them (output copies, scratch-file I/O), and the
 * spinning threads take the cores from it: measured on 2 shared cores, the disk-offloaded step
 * took 1.8× the fused step's time spinning and 1.2× not spinning.
 */
export const SEGMENT_SESSION_EXTRA = { session: { intra_op: { allow_spinning: '0' } } } as const;

/**
 * Builds every segment model for `recompute` and opens them; the sessions created are pushed to
 * `created` as they open (the caller releases them if anything later fails).
 */
export async function openSegmentSessions(
  spec: GptSpec,
  dtype: FloatDType,
  recompute: readonly string[],
  adamw: ResolvedAdamW,
  options: SegmentedTrainStepOptions,
  created: Session[],
): Promise<Sessions> {
  const models: SegmentModel[] = [];
  const add = (m: SegmentModel): number => models.push(m) - 1;
  const byKind = new Map<UnitKind, { forward: number; backward: number; saved: SavedSlot[] }>();
  const unitPlan: { name: string; prefix: string; forward: number; backward: number; saved: SavedSlot[] }[] = [];
  for (let i = 0; i < spec.nLayers; i++) {
    for (const kind of blockUnits(recompute, i)) {
      let shared = byKind.get(kind);
      if (!shared) {
        const seg = buildUnitSegments(spec, dtype, kind);
        shared = { forward: add(seg.forward), backward: add(seg.backward), saved: seg.saved };
        byKind.set(kind, shared);
      }
      unitPlan.push({ name: `h.${i}.${kind.split(':')[0]}`, prefix: `h.${i}.`, ...shared });
    }
  }
  const at = {
    embedForward: add(buildEmbedForward(spec, dtype)),
    embedBackward: add(buildEmbedBackward(spec, dtype)),
    head: add(buildHead(spec, dtype)),
    gradNorm: add(buildGradNorm(spec, dtype)),
    adamwBlock: add(buildAdamWGroup(spec, dtype, adamw, 'block')),
    adamwRest: add(buildAdamWGroup(spec, dtype, adamw, 'rest')),
  };
  const segs = await openSegments(models, dtype, options, created);
  const units: Unit[] = unitPlan.map((u) => ({ ...u, forward: segs[u.forward]!, backward: segs[u.backward]! }));
  const sessions: Sessions = {
    embedForward: segs[at.embedForward]!,
    embedBackward: segs[at.embedBackward]!,
    head: segs[at.head]!,
    units,
    gradNorm: segs[at.gradNorm]!,
    adamwBlock: segs[at.adamwBlock]!,
    adamwRest: segs[at.adamwRest]!,
  };
  return sessions;
}

/**
 * One session for every segment model (`buildSwitchModel`): one memory arena, sized by the
 * largest segment, and one thread pool. One session per segment was measured too: each keeps its
 * own allocations (no arena: the C allocator's; with arenas: one per session), and the activation
 * peak came out at 277–288 MB instead of 159–167 (bench geometry, batch 32).
 */
async function openSegments(
  models: SegmentModel[],
  dtype: FloatDType,
  options: SegmentedTrainStepOptions,
  created: Session[],
): Promise<Segment[]> {
  const sw = buildSwitchModel(dtype, models);
  const session = await createTrainingSession(sw.bytes, options, SEGMENT_SESSION_EXTRA);
  created.push(session);
  // Placeholders for the inputs of the segments not selected: never read (their If takes the
  // else-branch). Symbolic dimensions are 0; fixed shapes view one zero buffer nothing touches.
  const dimsOf = (shape: readonly (number | string)[]): number[] => shape.map((d) => (typeof d === 'number' ? d : 0));
  const elementBytes = (type: number): number => (type === OnnxDataType.INT64 || dtype === 'float64' ? 8 : 4);
  let maxBytes = 8;
  for (const i of sw.inputs)
    maxBytes = Math.max(
      maxBytes,
      dimsOf(i.shape ?? []).reduce((n, d) => n * d, elementBytes(i.dataType)),
    );
  const zero = new ArrayBuffer(maxBytes);
  const placeholders: Feeds = {};
  for (const i of sw.inputs) {
    if (i.name === 'segment') continue;
    const dims = dimsOf(i.shape ?? []);
    const n = dims.reduce((a, d) => a * d, 1);
    placeholders[i.name] =
      i.dataType === OnnxDataType.INT64
        ? new ort.Tensor('int64', new BigInt64Array(zero, 0, n), dims)
        : dtype === 'float64'
          ? new ort.Tensor('float64', new Float64Array(zero, 0, n), dims)
          : new ort.Tensor('float32', new Float32Array(zero, 0, n), dims);
  }
  return sw.segments.map((seg, k) => {
    const selector = new ort.Tensor('int64', BigInt64Array.of(BigInt(k)), []);
    const fetches = [...seg.outputs.keys()];
    return {
      inputNames: seg.inputNames,
      outputNames: [...seg.outputs.values()],
      run: async (feeds: Feeds) => {
        const out = (await session.run({ ...placeholders, ...feeds, segment: selector }, fetches)) as Record<
          string,
          ort.Tensor
        >;
        const named: Record<string, ort.Tensor> = {};
        for (const [full, own] of seg.outputs) named[own] = out[full]!;
        return named;
      },
    };
  });
}
