// A GPT-2 forward in plain TypeScript (float64), built from a Hugging Face config.json and the
// GPT-2 tensor names of model.safetensors alone: the Node twin of the PyTorch interop check.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainBatch } from './make-synthetic-batch';
import { readSafetensors } from './read-safetensors';

interface Cfg {
  vocab_size: number;
  n_embd: number;
  n_layer: number;
  n_head: number;
  n_inner: number | null;
  activation_function: string;
  layer_norm_epsilon: number;
  tie_word_embeddings: boolean;
}

type Mat = Float64Array; // row-major

/** Mean next-token cross-entropy of `batch` under the GPT-2 in `dir` (config.json + model.safetensors). */
export function gpt2LossFromFolder(dir: string, batch: TrainBatch): number {
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Cfg;
  if (cfg.activation_function !== 'gelu_new') throw new Error(`activation ${cfg.activation_function} not implemented`);
  const tensors = readSafetensors(join(dir, 'model.safetensors')).tensors;
  const W = (name: string): Mat => {
    const t = tensors.get(name);
    if (!t) throw new Error(`model.safetensors has no ${name}`);
    return Float64Array.from(t.data as ArrayLike<number>);
  };
  const D = cfg.n_embd;
  const H = cfg.n_head;
  const dh = D / H;
  const F = cfg.n_inner ?? 4 * D;
  const V = cfg.vocab_size;
  const eps = cfg.layer_norm_epsilon;
  const T = batch.inputIds.length / batch.batchSize;
  // y[n, out] = x[n, in] @ w[in, out] + b  (GPT-2 Conv1D)
  const conv1d = (x: Mat, n: number, inD: number, outD: number, w: Mat, b: Mat): Mat => {
    const y = new Float64Array(n * outD);
    for (let r = 0; r < n; r++) {
      for (let o = 0; o < outD; o++) y[r * outD + o] = b[o]!;
      for (let i = 0; i < inD; i++) {
        const xv = x[r * inD + i]!;
        for (let o = 0; o < outD; o++) y[r * outD + o]! += xv * w[i * outD + o]!;
      }
    }
    return y;
  };
  const layerNorm = (x: Mat, n: number, g: Mat, b: Mat): Mat => {
    const y = new Float64Array(n * D);
    for (let r = 0; r < n; r++) {
      let mean = 0;
      for (let i = 0; i < D; i++) mean += x[r * D + i]!;
      mean /= D;
      let v = 0;
      for (let i = 0; i < D; i++) v += (x[r * D + i]! - mean) ** 2;
      const rstd = 1 / Math.sqrt(v / D + eps);
      for (let i = 0; i < D; i++) y[r * D + i] = (x[r * D + i]! - mean) * rstd * g[i]! + b[i]!;
    }
    return y;
  };
  const gelu = (x: number): number => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const wte = W('wte.weight');
  const wpe = W('wpe.weight');
  let total = 0;
  for (let b = 0; b < batch.batchSize; b++) {
    let x = new Float64Array(T * D);
    for (let t = 0; t < T; t++) {
      const id = Number(batch.inputIds[b * T + t]);
      for (let i = 0; i < D; i++) x[t * D + i] = wte[id * D + i]! + wpe[t * D + i]!;
    }
    for (let l = 0; l < cfg.n_layer; l++) {
      const h = `h.${l}`;
      const a = layerNorm(x, T, W(`${h}.ln_1.weight`), W(`${h}.ln_1.bias`));
      const qkv = conv1d(a, T, D, 3 * D, W(`${h}.attn.c_attn.weight`), W(`${h}.attn.c_attn.bias`));
      const o = new Float64Array(T * D);
      for (let hd = 0; hd < H; hd++) {
        for (let t = 0; t < T; t++) {
          const s = new Float64Array(t + 1);
          let mx = -Infinity;
          for (let u = 0; u <= t; u++) {
            let dot = 0;
            for (let i = 0; i < dh; i++) dot += qkv[t * 3 * D + hd * dh + i]! * qkv[u * 3 * D + D + hd * dh + i]!;
            s[u] = dot / Math.sqrt(dh);
            mx = Math.max(mx, s[u]!);
          }
          let z = 0;
          for (let u = 0; u <= t; u++) z += s[u] = Math.exp(s[u]! - mx);
          for (let u = 0; u <= t; u++)
            for (let i = 0; i < dh; i++) o[t * D + hd * dh + i]! += (s[u]! / z) * qkv[u * 3 * D + 2 * D + hd * dh + i]!;
        }
      }
      const attn = conv1d(o, T, D, D, W(`${h}.attn.c_proj.weight`), W(`${h}.attn.c_proj.bias`));
      x = x.map((v, i) => v + attn[i]!);
      const m = layerNorm(x, T, W(`${h}.ln_2.weight`), W(`${h}.ln_2.bias`));
      const fc = conv1d(m, T, D, F, W(`${h}.mlp.c_fc.weight`), W(`${h}.mlp.c_fc.bias`)).map(gelu);
      const proj = conv1d(fc, T, F, D, W(`${h}.mlp.c_proj.weight`), W(`${h}.mlp.c_proj.bias`));
      x = x.map((v, i) => v + proj[i]!);
    }
    const y = layerNorm(x, T, W('ln_f.weight'), W('ln_f.bias'));
    const head = cfg.tie_word_embeddings ? wte : W('lm_head.weight'); // [V, D]
    for (let t = 0; t < T; t++) {
      const logits = new Float64Array(V);
      let mx = -Infinity;
      for (let v = 0; v < V; v++) {
        let dot = 0;
        for (let i = 0; i < D; i++) dot += y[t * D + i]! * head[v * D + i]!;
        logits[v] = dot;
        mx = Math.max(mx, dot);
      }
      let z = 0;
      for (let v = 0; v < V; v++) z += Math.exp(logits[v]! - mx);
      total += Math.log(z) + mx - logits[Number(batch.labels[b * T + t])]!;
    }
  }
  return total / (batch.batchSize * T);
}
