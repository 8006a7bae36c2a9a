// The optimizer part of the segmented step: the global gradient norm, then clipping + AdamW one
// block at a time and once for the other parameters.
import ort from 'onnxruntime-node';
import { releaseBuffers } from './_release-buffers';
import { type Feeds, paramSpecOf, runSegment, type Segment, type SegmentContext } from './_segment-context';
import { optimizerFeeds } from './_step-common';
import type { FloatArray } from './init-parameters';
import { tensorNames } from './tensor-names';

/** The global gradient norm (one small session over every gradient). */
export async function gradNorm(
  ctx: SegmentContext,
  grads: Map<string, FloatArray>,
  batchSize: number,
): Promise<ort.Tensor> {
  const feeds: Feeds = {};
  for (const p of ctx.params) feeds[tensorNames.grad(p.name)] = new ort.Tensor(ctx.dtype, grads.get(p.name)!, p.shape);
  return (await runSegment(ctx.sessions.gradNorm, feeds, batchSize, 'grad-norm'))[tensorNames.gradNorm]!;
}

/**
 * Gradient norm, then clipping + AdamW one block at a time and once for the other parameters,
 * so that only one group's new values (which the runtime returns as copies) are in flight.
 */
export async function optimize(
  ctx: SegmentContext,
  grads: Map<string, FloatArray>,
  lr: number,
  step: number,
  batchSize: number,
): Promise<{ gradNorm: number }> {
  const norm = await gradNorm(ctx, grads, batchSize);
  const common: Feeds = { ...optimizerFeeds(ctx.dtype, lr, step), [tensorNames.gradNorm]: norm };
  const groups: [Segment, string][] = Array.from({ length: ctx.spec.nLayers }, (_, i) => [
    ctx.sessions.adamwBlock,
    `h.${i}.`,
  ]);
  groups.push([ctx.sessions.adamwRest, '']);
  for (const [session, prefix] of groups) {
    const feeds: Feeds = { ...common };
    for (const name of session.inputNames) {
      if (name in feeds) continue;
      const { key, param } = stateKey(name, prefix);
      const p = paramSpecOf(ctx, param);
      feeds[name] = new ort.Tensor(ctx.dtype, key === 'grad' ? grads.get(param)! : ctx.state.get(key)!, p.shape);
    }
    const out = await runSegment(session, feeds, batchSize, prefix ? `${prefix}adamw` : 'adamw');
    // Copied into the step's own arrays, and the runtime's copies freed at once. Swapping the
    // arrays instead saved ~40 ms a step (bench geometry, batch 32) but left the allocator's
    // heap more fragmented: a peak up to 20 MiB higher from run to run.
    for (const name of session.outputNames) {
      const { key } = stateKey(name.slice('updated.'.length), prefix);
      ctx.state.get(key)!.set(out[name]!.data as FloatArray);
    }
    releaseBuffers(Object.values(out).map((t) => t.data as ArrayBufferView));
  }
  return { gradNorm: Number(norm.data[0]) };
}

/**
 * Maps an optimizer-session name (`adam_m.ln_1.weight`, `grad.ln_1.weight`, `ln_1.weight`) to its state key and
 * parameter.
 */
function stateKey(name: string, prefix: string): { key: string; param: string } {
  for (const kind of ['adam_m.', 'adam_v.'] as const) {
    if (name.startsWith(kind)) {
      const param = prefix + name.slice(kind.length);
      return { key: kind + param, param };
    }
  }
  if (name.startsWith('grad.')) return { key: 'grad', param: prefix + name.slice('grad.'.length) };
  return { key: prefix + name, param: prefix + name };
}
