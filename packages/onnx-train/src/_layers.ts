// The GPT layer modules: forward and backward emitters with explicit saved tensors.
// Activations of the residual stream are 2-D `[tokens, dModel]` (tokens = batch × seqLen),
// so every linear layer is one Gemm and its weight gradient one Gemm with transA.
import { OnnxDataType } from './_proto';
import type { Emitter } from './_graph';
import type { BackwardOut, EmitEnv, ForwardOut, LayerModule } from './_module';
import type { GptSpec } from './gpt-spec';
import { GPT2_LAYER_NORM_EPSILON } from './gpt2-config';

const LN_EPS = GPT2_LAYER_NORM_EPSILON;
const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_K = 0.044715;

function grads(entries: [string, string][]): Map<string, string> {
  return new Map(entries);
}

/** LayerNorm over the last axis of `[tokens, D]`. Built from primitive ops so float64 runs too. */
export function layerNorm(name: string, spec: GptSpec): LayerModule {
  const D = spec.dModel;
  const w = `${name}.weight`;
  const b = `${name}.bias`;
  return {
    name,
    shapePreserving: true,
    saves: [
      { key: 'xhat', shape: ['tokens', D], type: 'float' },
      { key: 'rstd', shape: ['tokens', 1], type: 'float' },
    ],
    forward(e, env, x): ForwardOut {
      const mean = e.reduceMean(x, [-1], D, true);
      const xc = e.sub(x, mean);
      const variance = e.reduceMean(e.mul(xc, xc), [-1], D, true);
      const rstd = e.unary('Reciprocal', e.unary('Sqrt', e.add(variance, e.scalar(LN_EPS))));
      const xhat = e.mul(xc, rstd);
      const y = e.add(e.mul(xhat, env.param(w)), env.param(b));
      return { y, saved: { xhat, rstd } };
    },
    backward(e, env, saved, dy): BackwardOut {
      if (dy === null) throw new Error('layerNorm needs dy');
      const xhat = saved.xhat!;
      const rstd = saved.rstd!;
      const dw = e.reduceSum(e.mul(dy, xhat), [0], false);
      const db = e.reduceSum(dy, [0], false);
      const dxhat = e.mul(dy, env.param(w));
      const meanD = e.reduceMean(dxhat, [-1], D, true);
      const meanDX = e.reduceMean(e.mul(dxhat, xhat), [-1], D, true);
      const dx = e.mul(e.sub(e.sub(dxhat, meanD), e.mul(xhat, meanDX)), rstd);
      return {
        dx,
        grads: grads([
          [w, dw],
          [b, db],
        ]),
      };
    },
  };
}

/** Causal multi-head self-attention (`c_attn` → heads → softmax → `c_proj`), HF GPT-2 layout. */
/**
 * With `recomputeCore` (Megatron-LM's selective recomputation, `h.<i>.attn.core`): the forward keeps
 * `a`, `q`, `k`, `v` and `o` but not the `[batch, H, T, T]` probabilities `p`, which the backward
 * recomputes from `q` and `k` (scores + softmax, gated on the upstream gradient so it runs there).
 */
export function attention(name: string, spec: GptSpec, opts: { recomputeCore?: boolean } = {}): LayerModule {
  const { seqLen: T, dModel: D, nHeads: H } = spec;
  const dh = D / H;
  const scale = 1 / Math.sqrt(dh);
  const wqkv = `${name}.c_attn.weight`;
  const bqkv = `${name}.c_attn.bias`;
  const wo = `${name}.c_proj.weight`;
  const bo = `${name}.c_proj.bias`;
  const heads = ['batch', H, T, dh] as const;
  return {
    name,
    shapePreserving: true,
    saves: [
      { key: 'a', shape: ['tokens', D], type: 'float' },
      { key: 'q', shape: heads, type: 'float' },
      { key: 'k', shape: heads, type: 'float' },
      { key: 'v', shape: heads, type: 'float' },
      ...(opts.recomputeCore ? [] : [{ key: 'p', shape: ['batch', H, T, T] as const, type: 'float' as const }]),
      { key: 'o', shape: ['tokens', D], type: 'float' },
    ],
    forward(e, env, a): ForwardOut {
      const qkv = e.gemm(a, env.param(wqkv), { c: env.param(bqkv) });
      // [B, T, 3, H, dh] → [3, B, H, T, dh], one transpose for q, k and v.
      const split = e.transpose(e.reshape(qkv, [-1, T, 3, H, dh]), [2, 0, 3, 1, 4]);
      const [q3, k3, v3] = e.op('Split', [split, e.i64([1, 1, 1])], { axis: 0 }, { outputs: 3 }) as [
        string,
        string,
        string,
      ];
      const q = e.mul(e.reshape(q3, [-1, H, T, dh]), e.scalar(scale));
      const k = e.reshape(k3, [-1, H, T, dh]);
      const v = e.reshape(v3, [-1, H, T, dh]);
      const s = e.add(e.matmul(q, e.transpose(k, [0, 1, 3, 2])), env.causalMask(e));
      const p = e.op1('Softmax', [s], { axis: -1 });
      const o4 = e.matmul(p, v);
      const o = e.reshape(e.transpose(o4, [0, 2, 1, 3]), [-1, D]);
      const y = e.gemm(o, env.param(wo), { c: env.param(bo) });
      return { y, saved: opts.recomputeCore ? { a, q, k, v, o } : { a, q, k, v, p, o } };
    },
    backward(e, env, saved, dy): BackwardOut {
      if (dy === null) throw new Error('attention needs dy');
      const { a, q, k, v, o } = saved as Record<'a' | 'q' | 'k' | 'v' | 'o', string>;
      const dWo = e.gemm(o, dy, { transA: true });
      const dbo = e.reduceSum(dy, [0], false);
      const do2 = e.gemm(dy, env.param(wo), { transB: true });
      const do4 = e.transpose(e.reshape(do2, [-1, T, H, dh]), [0, 2, 1, 3]);
      let p = saved.p!;
      if (opts.recomputeCore) {
        // Scores and softmax again, once the upstream gradient exists (q gated on do4's shape).
        const r = e.scope('recompute');
        const qg = r.op1('Reshape', [q, r.op1('Shape', [do4])]);
        p = r.op1('Softmax', [r.add(r.matmul(qg, r.transpose(k, [0, 1, 3, 2])), env.causalMask(r))], { axis: -1 });
      }
      const dv = e.matmul(e.transpose(p, [0, 1, 3, 2]), do4);
      const dp = e.matmul(do4, e.transpose(v, [0, 1, 3, 2]));
      // softmax backward: ds = p ⊙ (dp − Σ_j dp ⊙ p)
      const ds = e.mul(p, e.sub(dp, e.reduceSum(e.mul(dp, p), [-1], true)));
      const dq = e.mul(e.matmul(ds, k), e.scalar(scale));
      const dk = e.matmul(e.transpose(ds, [0, 1, 3, 2]), q);
      // [B, H, T, dh] ×3 → [B, H, 3, T, dh] → [B, T, 3, H, dh] → [tokens, 3D]
      const stacked = e.op1(
        'Concat',
        [dq, dk, dv].map((t) => e.op1('Unsqueeze', [t, e.i64([2])])),
        { axis: 2 },
      );
      const dqkv = e.reshape(e.transpose(stacked, [0, 3, 2, 1, 4]), [-1, 3 * D]);
      const dWqkv = e.gemm(a, dqkv, { transA: true });
      const dbqkv = e.reduceSum(dqkv, [0], false);
      const da = e.gemm(dqkv, env.param(wqkv), { transB: true });
      return {
        dx: da,
        grads: grads([
          [wqkv, dWqkv],
          [bqkv, dbqkv],
          [wo, dWo],
          [bo, dbo],
        ]),
      };
    },
  };
}

/** tanh-approximated GELU: `tanh(c·(h + k·h³))`. */
function geluTanh(e: Emitter, h: string): { t: string } {
  const inner = e.mul(e.add(e.mul(e.mul(h, h), e.scalar(GELU_C * GELU_K)), e.scalar(GELU_C)), h);
  return { t: e.unary('Tanh', inner) };
}

/** GPT-2 MLP: `c_fc` → GELU (tanh approximation, HF `gelu_new`) → `c_proj`. */
export function mlp(name: string, spec: GptSpec): LayerModule {
  const { dModel: D, dFF: F } = spec;
  const wfc = `${name}.c_fc.weight`;
  const bfc = `${name}.c_fc.bias`;
  const wp = `${name}.c_proj.weight`;
  const bp = `${name}.c_proj.bias`;
  return {
    name,
    shapePreserving: true,
    saves: [
      { key: 'b', shape: ['tokens', D], type: 'float' },
      { key: 'h', shape: ['tokens', F], type: 'float' },
      { key: 'u', shape: ['tokens', F], type: 'float' },
    ],
    forward(e, env, b): ForwardOut {
      const h = e.gemm(b, env.param(wfc), { c: env.param(bfc) });
      // g = h·u with u = ½(1 + tanh(c·(h + k·h³))); the backward needs only h and u.
      const { t } = geluTanh(e, h);
      const u = e.add(e.mul(t, e.scalar(0.5)), e.scalar(0.5));
      const g = e.mul(h, u);
      const z = e.gemm(g, env.param(wp), { c: env.param(bp) });
      return { y: z, saved: { b, h, u } };
    },
    backward(e, env, saved, dz): BackwardOut {
      if (dz === null) throw new Error('mlp needs dy');
      const { b, h, u } = saved as Record<'b' | 'h' | 'u', string>;
      const dWp = e.gemm(e.mul(h, u), dz, { transA: true });
      const dbp = e.reduceSum(dz, [0], false);
      const dg = e.gemm(dz, env.param(wp), { transB: true });
      // gelu'(h) = u + ½h(1−t²)·c(1+3k·h²) = u + h·u·(1−u)·(2c + 6ck·h²), since 1−t² = 4u(1−u).
      // Arranged for ORT's execution order (a depth-first walk that visits later-emitted inputs
      // first) so that at most four [tokens, dFF] tensors are alive at once: g = h·u dies with
      // the weight gradient, and the polynomial absorbs h before 1 − u is needed.
      const w = e.sub(e.scalar(1), u);
      const poly = e.add(e.mul(e.mul(h, h), e.scalar(6 * GELU_C * GELU_K)), e.scalar(2 * GELU_C));
      const deriv = e.add(e.mul(e.mul(e.mul(poly, h), w), u), u);
      const dh = e.mul(dg, deriv);
      const dWfc = e.gemm(b, dh, { transA: true });
      const dbfc = e.reduceSum(dh, [0], false);
      const db = e.gemm(dh, env.param(wfc), { transB: true });
      return {
        dx: db,
        grads: grads([
          [wfc, dWfc],
          [bfc, dbfc],
          [wp, dWp],
          [bp, dbp],
        ]),
      };
    },
  };
}

/** Token + learned position embeddings: `[batch, seqLen]` ids → `[tokens, dModel]`. */
export function embeddings(spec: GptSpec): LayerModule {
  const { seqLen: T, dModel: D, vocabSize: V } = spec;
  return {
    name: 'wte+wpe',
    shapePreserving: false,
    saves: [{ key: 'ids', shape: ['batch', T], type: 'int64' }],
    forward(e, env, ids): ForwardOut {
      const tok = e.op1('Gather', [env.param('wte.weight'), ids], { axis: 0 });
      const y = e.reshape(e.add(tok, env.param('wpe.weight')), [-1, D]);
      return { y, saved: { ids } };
    },
    backward(e, _env, saved, dy): BackwardOut {
      if (dy === null) throw new Error('embeddings need dy');
      const dwpe = e.reduceSum(e.reshape(dy, [-1, T, D]), [0], false);
      // d wte = scatter-add of the rows of dy at the token ids (ScatterElements, reduction add).
      const index = e.op1('Expand', [e.reshape(saved.ids!, [-1, 1]), e.i64([1, D])]);
      const zeros = e.op1('ConstantOfShape', [e.i64([V, D])], {
        value: {
          kind: 'tensor',
          value: { dataType: e.core.floatType, dims: [1], raw: new Uint8Array(e.dtype === 'float64' ? 8 : 4) },
        },
      });
      const dwte = e.op1('ScatterElements', [zeros, index, dy], { axis: 0, reduction: 'add' });
      return {
        dx: null,
        grads: grads([
          ['wte.weight', dwte],
          ['wpe.weight', dwpe],
        ]),
      };
    },
  };
}

/** LM head + next-token cross-entropy (mean over tokens). Reads `labels` from the graph. */
export function lmHeadLoss(spec: GptSpec): LayerModule {
  const { vocabSize: V } = spec;
  const W = spec.tieEmbeddings ? 'wte.weight' : 'lm_head.weight';
  const invTokens = (e: Emitter, labels: string): string => e.unary('Reciprocal', e.castFloat(e.op1('Size', [labels])));
  return {
    name: 'lm_head',
    shapePreserving: false,
    saves: [
      { key: 'x', shape: ['tokens', spec.dModel], type: 'float' },
      { key: 'logp', shape: ['tokens', V], type: 'float' },
    ],
    forward(e, env, x): ForwardOut {
      const labels = env.input('labels');
      const logits = e.gemm(x, env.param(W), { transB: true });
      const logp = e.op1('LogSoftmax', [logits], { axis: -1 });
      const index = e.reshape(labels, [-1, 1]);
      const picked = e.op1('GatherElements', [logp, index], { axis: 1 });
      const loss = e.mul(e.unary('Neg', e.reduceSum(picked, [0, 1], false)), invTokens(e, labels));
      return { y: loss, saved: { x, logp } };
    },
    backward(e, env, saved, dy): BackwardOut {
      if (dy !== null) throw new Error('the loss head seeds the backward; dy must be null');
      const labels = env.input('labels');
      const inv = invTokens(e, labels);
      const index = e.reshape(labels, [-1, 1]);
      // d loss / d logits = (softmax − onehot(labels)) / tokens
      const probs = e.mul(e.unary('Exp', saved.logp!), inv);
      const minus = e.op1('Expand', [e.unary('Neg', inv), e.op1('Shape', [index])]);
      const dlogits = e.op1('ScatterElements', [probs, index, minus], { axis: 1, reduction: 'add' });
      const dx = e.gemm(dlogits, env.param(W));
      const dW = e.gemm(dlogits, saved.x!, { transA: true });
      return { dx, grads: grads([[W, dW]]) };
    },
  };
}

/** Labels are int64; re-exported so callers need not import the proto module. */
export const LABEL_TYPE = OnnxDataType.INT64;

export type { EmitEnv };
