// One forward + backward pass of the segmented step: embedding, half-block forwards (their saved
// tensors packed into the step's activation store), LM head + loss, half-block backwards (unpacked,
// last first), embedding backward. Each segment runs in a helper of its own, so its outputs are
// unreachable as soon as what the step keeps is taken.
import type { ActivationHandle, ActivationStore } from '@soup/offload';
import type ort from 'onnxruntime-node';
import { releaseBuffers } from './_release-buffers';
import { type Feeds, runSegment, segmentFeeds, type SegmentContext, type Unit } from './_segment-context';
import { storeFailure, toOffload, toOrt } from './_segment-store';
import { zerosOf } from './_step-common';
import type { FloatArray } from './init-parameters';
import type { SegmentedStepStats } from './segmented-step-types';
import { tensorNames } from './tensor-names';

/**
 * Embedding forward, unit forwards (saved tensors packed into a fresh store), head, unit
 * backwards (unpacked, last unit first), embedding backward. The store is closed whatever
 * happens, so no scratch file outlives the call. Each segment runs in a helper of its own, so
 * its outputs are unreachable as soon as what the step keeps (y, dx, gradients) is taken.
 */
export async function forwardBackward(
  ctx: SegmentContext,
  batchSize: number,
  batchFeeds: Feeds,
  openStore: () => ActivationStore,
): Promise<{ loss: number; grads: Map<string, FloatArray>; stats: Omit<SegmentedStepStats, 'optimizerMs'> }> {
  const { sessions } = ctx;
  const store = openStore();
  const io = { packMs: 0, unpackMs: 0 };
  const grads = new Map<string, FloatArray>();
  // The saved tensors of the unit whose backward runs next, being read while the current one runs.
  let next: Promise<Feeds> | null = null;
  try {
    const t0 = performance.now();
    const ids = batchFeeds[tensorNames.inputIds]!;
    let x: ort.Tensor | null = await embedForward(ctx, ids, batchSize);
    const handles: (Map<string, ActivationHandle> | null)[] = [];
    for (const u of sessions.units) {
      const r = await unitForward(ctx, u, x, store, batchSize, io);
      handles.push(r.saved);
      x = r.y;
    }
    const t1 = performance.now();
    // Backward, last unit first. Unit k-1's saved tensors are unpacked (asynchronously: for a disk
    // store, read from its scratch files) while unit k's backward runs inside ONNX Runtime, and the
    // last unit's while the head runs, so the reads overlap compute; at most one unit's saved
    // tensors are held ahead of their use.
    const unpackUnit = (k: number): Promise<Feeds> => {
      const u = sessions.units[k]!;
      const saved = handles[k]!;
      handles[k] = null;
      const p = unpackSaved(u, saved, store);
      p.catch(() => undefined); // awaited below; a failure is raised there, not as an unhandled rejection
      return p;
    };
    next = sessions.units.length > 0 ? unpackUnit(sessions.units.length - 1) : null;
    const head = await headStep(ctx, x, batchFeeds[tensorNames.labels]!, grads, batchSize);
    releaseBuffers([x.data as ArrayBufferView]);
    x = null;
    let dy = head.dx;
    const t2 = performance.now();
    for (let k = sessions.units.length - 1; k >= 0; k--) {
      const u = sessions.units[k]!;
      const tu = performance.now();
      let savedFeeds: Feeds;
      try {
        savedFeeds = await next!;
      } catch (err) {
        throw storeFailure(`${u.name} backward`, 'unpack', err);
      }
      io.unpackMs += performance.now() - tu;
      next = k > 0 ? unpackUnit(k - 1) : null;
      dy = await unitBackward(ctx, u, dy, savedFeeds, grads, batchSize);
    }
    await embedBackward(ctx, ids, dy, grads, batchSize);
    const t3 = performance.now();
    const ordered = new Map<string, FloatArray>();
    for (const p of ctx.params) ordered.set(p.name, grads.get(p.name)!);
    return {
      loss: head.loss,
      grads: ordered,
      stats: { store: store.stats, forwardMs: t1 - t0, headMs: t2 - t1, backwardMs: t3 - t2, ...io },
    };
  } finally {
    // A read still in flight (a failed step) ends before the store deletes what is left.
    await next?.catch(() => undefined);
    store.close();
  }
}

async function embedForward(ctx: SegmentContext, ids: ort.Tensor, batchSize: number): Promise<ort.Tensor> {
  const s = ctx.sessions.embedForward;
  return (await runSegment(s, segmentFeeds(ctx, s, { [tensorNames.inputIds]: ids }), batchSize, 'wte+wpe forward')).y!;
}

/** One unit's forward: its saved tensors go into the store, its output is returned. */
async function unitForward(
  ctx: SegmentContext,
  u: Unit,
  x: ort.Tensor,
  store: ActivationStore,
  batchSize: number,
  io: { packMs: number },
): Promise<{ y: ort.Tensor; saved: Map<string, ActivationHandle> }> {
  const out = await runSegment(
    u.forward,
    segmentFeeds(ctx, u.forward, { x }, u.prefix),
    batchSize,
    `${u.name} forward`,
  );
  const tp = performance.now();
  const saved = new Map<string, ActivationHandle>();
  try {
    for (const slot of u.saved)
      saved.set(slot.key, store.pack(toOffload(slot.fromInput ? x : out[`saved.${slot.key}`]!)));
  } catch (err) {
    throw storeFailure(`${u.name} forward`, 'pack', err);
  }
  io.packMs += performance.now() - tp;
  {
    // What the store copied or wrote is dead here; x too unless a 'keep' store holds it.
    const keep = store.target === 'keep';
    const dead: ort.Tensor[] = [];
    for (const [name, t] of Object.entries(out)) if (name !== 'y' && !keep) dead.push(t);
    if (!(keep && u.saved.some((slot) => slot.fromInput))) dead.push(x);
    releaseBuffers(dead.map((t) => t.data as ArrayBufferView));
  }
  return { y: out.y!, saved };
}

/** LN_f + LM head + loss, forward and backward: the loss, d(loss)/dx and the head's gradients. */
async function headStep(
  ctx: SegmentContext,
  x: ort.Tensor,
  labels: ort.Tensor,
  grads: Map<string, FloatArray>,
  batchSize: number,
): Promise<{ loss: number; dx: ort.Tensor }> {
  const s = ctx.sessions.head;
  const out = await runSegment(
    s,
    segmentFeeds(ctx, s, { x, [tensorNames.labels]: labels }),
    batchSize,
    'ln_f + lm_head',
  );
  const headW = ctx.spec.tieEmbeddings ? 'wte.weight' : 'lm_head.weight';
  for (const p of ['ln_f.weight', 'ln_f.bias', headW]) grads.set(p, out[tensorNames.grad(p)]!.data as FloatArray);
  return { loss: Number(out[tensorNames.loss]!.data[0]), dx: out.dx! };
}

/**
 * Unpacks one unit's saved tensors (forgotten by the store) as the feeds of its backward. Every read
 * is issued at once: ONNX Runtime's run holds the JavaScript thread, so a read issued only after
 * another one finished would wait for the whole backward before it starts.
 */
async function unpackSaved(u: Unit, saved: Map<string, ActivationHandle>, store: ActivationStore): Promise<Feeds> {
  const tensors = await Promise.all(u.saved.map((slot) => store.unpackAsync(saved.get(slot.key)!)));
  const feeds: Feeds = {};
  u.saved.forEach((slot, i) => {
    feeds[`saved.${slot.key}`] = toOrt(tensors[i]!);
  });
  return feeds;
}

/** One unit's backward from its unpacked saved tensors: records its gradients, returns dx. */
async function unitBackward(
  ctx: SegmentContext,
  u: Unit,
  dy: ort.Tensor,
  savedFeeds: Feeds,
  grads: Map<string, FloatArray>,
  batchSize: number,
): Promise<ort.Tensor> {
  const feeds: Feeds = { dy, ...savedFeeds };
  const out = await runSegment(
    u.backward,
    segmentFeeds(ctx, u.backward, feeds, u.prefix),
    batchSize,
    `${u.name} backward`,
  );
  for (const name of u.backward.outputNames) {
    if (name.startsWith('grad.')) grads.set(`${u.prefix}${name.slice('grad.'.length)}`, out[name]!.data as FloatArray);
  }
  // The unpacked tensors (the store has forgotten them) and dy are dead.
  releaseBuffers(
    Object.values(feeds)
      .filter((t) => t !== undefined)
      .map((t) => t.data as ArrayBufferView),
  );
  return out.dx!;
}

/** The embedding's gradients; with tied embeddings `wte.weight` gets the head's part added. */
async function embedBackward(
  ctx: SegmentContext,
  ids: ort.Tensor,
  dy: ort.Tensor,
  grads: Map<string, FloatArray>,
  batchSize: number,
): Promise<void> {
  const s = ctx.sessions.embedBackward;
  const out = await runSegment(
    s,
    segmentFeeds(ctx, s, { [tensorNames.inputIds]: ids, dy }),
    batchSize,
    'wte+wpe backward',
  );
  grads.set('wpe.weight', out[tensorNames.grad('wpe.weight')]!.data as FloatArray);
  const dwte = out[tensorNames.grad('wte.weight')]!.data as FloatArray;
  const headPart = ctx.spec.tieEmbeddings ? grads.get('wte.weight') : undefined;
  releaseBuffers([dy.data as ArrayBufferView]);
  if (!headPart) {
    grads.set('wte.weight', dwte);
    return;
  }
  // The fused graph's Sum of the two parts: one IEEE addition per element, the same values.
  const sum = zerosOf(ctx.dtype, dwte.length);
  for (let k = 0; k < sum.length; k++) sum[k] = headPart[k]! + dwte[k]!;
  grads.set('wte.weight', sum);
  releaseBuffers([headPart, dwte]);
}
