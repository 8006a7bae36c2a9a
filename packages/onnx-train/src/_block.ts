// A GPT transformer block `h.<i>` composed from the layer modules of _layers (ln_1, attn, ln_2,
// mlp), with the recompute options of gradient checkpointing applied per sub-block or per half.
import { attention, layerNorm, mlp } from './_layers';
import { withRecompute, type BackwardOut, type ForwardOut, type LayerModule } from './_module';
import type { GptSpec } from './gpt-spec';

function prefixed(prefix: string, rec: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec)) out[`${prefix}.${k}`] = v;
  return out;
}

function unprefixed(prefix: string, rec: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  const p = `${prefix}.`;
  for (const [k, v] of Object.entries(rec)) if (k.startsWith(p)) out[k.slice(p.length)] = v;
  return out;
}

export interface BlockOptions {
  /** Recompute the attention sub-block (`h.<i>.attn`) in the backward. */
  recomputeAttn?: boolean;
  /** Recompute only the attention core's probabilities (`h.<i>.attn.core`); ignored with `recomputeAttn`. */
  recomputeAttnCore?: boolean;
  /** Recompute the MLP sub-block (`h.<i>.mlp`) in the backward. */
  recomputeMlp?: boolean;
  /**
   * Recompute the whole block (`h.<i>`) in two halves, `ln_1` + `attn` and `ln_2` + `mlp`: each
   * keeps only its input (the block input, the mid-block residual) and is re-run on its own in
   * the backward, so the attention's activations are not alive during the MLP's backward.
   * Overrides `recomputeAttn` / `recomputeMlp`.
   */
  recomputeBlock?: boolean;
}

/** A LayerNorm and the sub-block it feeds (`ln_1` + `attn`, `ln_2` + `mlp`) as one module. */
function preNormed(ln: LayerModule, lnKey: string, sub: LayerModule, subKey: string): LayerModule {
  return {
    name: sub.name,
    shapePreserving: true,
    saves: [
      ...ln.saves.map((s) => ({ ...s, key: `${lnKey}.${s.key}` })),
      ...sub.saves.map((s) => ({ ...s, key: `${subKey}.${s.key}` })),
    ],
    forward(e, env, x): ForwardOut {
      const r1 = ln.forward(e.scope(lnKey), env, x);
      const r2 = sub.forward(e.scope(subKey), env, r1.y);
      return { y: r2.y, saved: { ...prefixed(lnKey, r1.saved), ...prefixed(subKey, r2.saved) } };
    },
    backward(e, env, saved, dy): BackwardOut {
      const g2 = sub.backward(e.scope(subKey), env, unprefixed(subKey, saved), dy);
      const g1 = ln.backward(e.scope(lnKey), env, unprefixed(lnKey, saved), g2.dx);
      return { dx: g1.dx, grads: new Map([...g2.grads, ...g1.grads]) };
    },
  };
}

/** `h.<i>` recomputed in two halves (see `BlockOptions.recomputeBlock`); saves `attn_half.input`, `mlp_half.input`. */
function recomputedBlock(
  name: string,
  spec: GptSpec,
  ln1: LayerModule,
  attn: LayerModule,
  ln2: LayerModule,
  ff: LayerModule,
): LayerModule {
  const first = withRecompute(preNormed(ln1, 'ln_1', attn, 'attn'), spec);
  const second = withRecompute(preNormed(ln2, 'ln_2', ff, 'mlp'), spec);
  return {
    name,
    shapePreserving: true,
    saves: [
      ...first.saves.map((s) => ({ ...s, key: `attn_half.${s.key}` })),
      ...second.saves.map((s) => ({ ...s, key: `mlp_half.${s.key}` })),
    ],
    forward(e, env, x): ForwardOut {
      const r1 = first.forward(e, env, x);
      const x2 = e.add(x, r1.y);
      const r2 = second.forward(e, env, x2);
      return { y: e.add(x2, r2.y), saved: { ...prefixed('attn_half', r1.saved), ...prefixed('mlp_half', r2.saved) } };
    },
    backward(e, env, saved, dy): BackwardOut {
      if (dy === null) throw new Error('block needs dy');
      // The MLP half re-runs once dy exists, the attention half once the MLP half's gradient does.
      const g2 = second.backward(e, env, unprefixed('mlp_half', saved), dy);
      const dx2 = e.add(dy, g2.dx!);
      const g1 = first.backward(e, env, unprefixed('attn_half', saved), dx2);
      return { dx: e.add(dx2, g1.dx!), grads: new Map([...g2.grads, ...g1.grads]) };
    },
  };
}

/** One pre-LayerNorm transformer block `h.<i>`: x + attn(ln_1(x)), then + mlp(ln_2(·)). */
export function block(index: number, spec: GptSpec, opts: BlockOptions = {}): LayerModule {
  const name = `h.${index}`;
  const ln1 = layerNorm(`${name}.ln_1`, spec);
  const ln2 = layerNorm(`${name}.ln_2`, spec);
  const attnPlain = attention(`${name}.attn`, spec);
  const mlpPlain = mlp(`${name}.mlp`, spec);
  if (opts.recomputeBlock) return recomputedBlock(name, spec, ln1, attnPlain, ln2, mlpPlain);
  const attn = opts.recomputeAttn
    ? withRecompute(attnPlain, spec)
    : opts.recomputeAttnCore
      ? attention(`${name}.attn`, spec, { recomputeCore: true })
      : attnPlain;
  const ff = opts.recomputeMlp ? withRecompute(mlpPlain, spec) : mlpPlain;
  const children = [
    ['ln_1', ln1],
    ['attn', attn],
    ['ln_2', ln2],
    ['mlp', ff],
  ] as const;
  return {
    name,
    shapePreserving: true,
    saves: children.flatMap(([p, m]) => m.saves.map((s) => ({ ...s, key: `${p}.${s.key}` }))),
    forward(e, env, x): ForwardOut {
      const r1 = ln1.forward(e.scope('ln_1'), env, x);
      const r2 = attn.forward(e.scope('attn'), env, r1.y);
      const x2 = e.add(x, r2.y);
      const r3 = ln2.forward(e.scope('ln_2'), env, x2);
      const r4 = ff.forward(e.scope('mlp'), env, r3.y);
      const y = e.add(x2, r4.y);
      return {
        y,
        saved: {
          ...prefixed('ln_1', r1.saved),
          ...prefixed('attn', r2.saved),
          ...prefixed('ln_2', r3.saved),
          ...prefixed('mlp', r4.saved),
        },
      };
    },
    backward(e, env, saved, dy): BackwardOut {
      if (dy === null) throw new Error('block needs dy');
      const g4 = ff.backward(e.scope('mlp'), env, unprefixed('mlp', saved), dy);
      const g3 = ln2.backward(e.scope('ln_2'), env, unprefixed('ln_2', saved), g4.dx);
      const dx2 = e.add(dy, g3.dx!);
      const g2 = attn.backward(e.scope('attn'), env, unprefixed('attn', saved), dx2);
      const g1 = ln1.backward(e.scope('ln_1'), env, unprefixed('ln_1', saved), g2.dx);
      const dx = e.add(dx2, g1.dx!);
      return { dx, grads: new Map([...g4.grads, ...g3.grads, ...g2.grads, ...g1.grads]) };
    },
  };
}
