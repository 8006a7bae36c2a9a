// The layer-module contract. A module emits its forward and its backward into any graph
// (the fused training step, or, later, one graph per segment) and declares exactly which
// tensors its backward reads from the forward (`saves`). Nothing else crosses from a
// module's forward to its backward, which is what makes recompute and segmented
// execution (saved tensors passed through an activation store) possible.
import type { Emitter } from './_graph';
import type { GptSpec } from './gpt-spec';

/** A dimension of a saved tensor: fixed, the batch, or batch × seqLen (`tokens`). */
export type SavedDim = number | 'batch' | 'tokens';

export interface SavedTensorSpec {
  /** Key in the `saved` record. */
  key: string;
  shape: readonly SavedDim[];
  /** `float` = the model's dtype. */
  type: 'float' | 'int64';
}

/** What a module reads from the graph it is emitted into. */
export interface EmitEnv {
  readonly spec: GptSpec;
  /** Value name holding parameter `name` (e.g. `h.0.attn.c_attn.weight`). */
  param(name: string): string;
  /** Value name of a graph-level input (`labels`). */
  input(name: 'labels'): string;
  /** The causal additive mask `[seqLen, seqLen]` (0 on and below the diagonal, -1e9 above). */
  causalMask(e: Emitter): string;
}

export interface ForwardOut {
  y: string;
  /** Exactly the keys of `saves`. */
  saved: Record<string, string>;
}

export interface BackwardOut {
  /** Gradient w.r.t. the module input; null for the embedding (its input is token ids). */
  dx: string | null;
  /** Gradient per parameter name (a tied parameter may appear in two modules: callers add them). */
  grads: Map<string, string>;
}

export interface LayerModule {
  readonly name: string;
  /** Whether `forward(x)` has the shape of `x` (required to recompute it). */
  readonly shapePreserving: boolean;
  readonly saves: readonly SavedTensorSpec[];
  forward(e: Emitter, env: EmitEnv, x: string): ForwardOut;
  /** `dy` is null for the loss head, which seeds the backward with d(loss)/d(loss) = 1. */
  backward(e: Emitter, env: EmitEnv, saved: Readonly<Record<string, string>>, dy: string | null): BackwardOut;
}

/**
 * Wraps a module so its backward re-emits its forward from the saved input: the forward's own
 * intermediates die right after the forward. The recompute waits on `dy` (its input is
 * re-derived through `Reshape(x, Shape(dy))`, an alias), so the scheduler cannot hoist it
 * back next to the forward. ORT's CommonSubexpressionElimination must be disabled on the
 * session or it merges the two copies.
 */
export function withRecompute(m: LayerModule, spec: GptSpec): LayerModule {
  if (!m.shapePreserving)
    throw new Error(`module ${m.name} cannot be recomputed: its output shape differs from its input`);
  return {
    name: m.name,
    shapePreserving: true,
    saves: [{ key: 'input', shape: ['tokens', spec.dModel], type: 'float' }],
    forward(e, env, x) {
      const { y } = m.forward(e, env, x);
      return { y, saved: { input: x } };
    },
    backward(e, env, saved, dy) {
      if (dy === null) throw new Error(`module ${m.name}: recompute needs an upstream gradient`);
      const r = e.scope('recompute');
      const gated = r.op1('Reshape', [saved.input!, r.op1('Shape', [dy])]);
      const again = m.forward(r, env, gated);
      return m.backward(e, env, again.saved, dy);
    },
  };
}
