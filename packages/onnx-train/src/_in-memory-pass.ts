// The forward + backward of a segmented step whose activations all stay in memory (`offload:
// {target: 'keep'}`): nothing leaves the runtime between a block's forward and its backward, so no
// segment boundary is needed there. The whole pass (embedding, blocks, head + loss, backwards) runs
// as one chain, one `session.run` of the fused graph's gradients model, with the same recompute
// plan: no saved activation is copied out of ONNX Runtime and fed back in (a per-half-block pass
// copied 144 MB of them per step at batch 16 of the bench geometry, in 17 runs). The optimizer
// stays segmented (gradient norm + AdamW per block).
import type { ActivationStore } from '@soup/offload';
import type ort from 'onnxruntime-node';
import { type Feeds, runSegment, type SegmentContext, type Session } from './_segment-context';
import { addParameterFeeds } from './_step-common';
import type { FloatArray } from './init-parameters';
import type { SegmentedStepStats } from './segmented-step-types';
import { tensorNames } from './tensor-names';

/** Loss and every parameter's gradient in one run of `chain` (the gradients model). */
export async function inMemoryPass(
  ctx: SegmentContext,
  chain: Session,
  batchSize: number,
  batchFeeds: Feeds,
  openStore: () => ActivationStore,
): Promise<{ loss: number; grads: Map<string, FloatArray>; stats: Omit<SegmentedStepStats, 'optimizerMs'> }> {
  // The store is opened and closed as in the segmented pass, so its counters (all zero: nothing
  // is packed) are the step's, and a custom store's lifecycle is the same.
  const store = openStore();
  try {
    const t0 = performance.now();
    const feeds = addParameterFeeds({ ...batchFeeds }, ctx.params, ctx.state, ctx.dtype);
    const fetches = [tensorNames.loss, ...ctx.params.map((p) => tensorNames.grad(p.name))];
    const out = await runSegment(
      {
        inputNames: [],
        outputNames: fetches,
        run: async (f) => (await chain.run(f, fetches)) as Record<string, ort.Tensor>,
      },
      feeds,
      batchSize,
      'forward + head + backward (one chain: nothing offloaded)',
    );
    const grads = new Map<string, FloatArray>();
    for (const p of ctx.params) grads.set(p.name, out[tensorNames.grad(p.name)]!.data as FloatArray);
    const t1 = performance.now();
    return {
      loss: Number(out[tensorNames.loss]!.data[0]),
      grads,
      stats: { store: store.stats, forwardMs: t1 - t0, headMs: 0, backwardMs: 0, packMs: 0, unpackMs: 0 },
    };
  } finally {
    store.close();
  }
}
