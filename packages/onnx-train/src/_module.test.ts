// Structural guarantee behind recompute and (future) segmented execution: a module's backward
// reads nothing from its forward except the tensors it declares in `saves`, and its forward
// reads nothing but its input, parameters, labels and constants. So each module's forward and
// backward can be cut into graphs of their own, saved tensors passed between them.
import { describe, expect, it } from 'vitest';
import { emitTrainingGraph } from './build-training-model';
import { defineGptSpec } from './gpt-spec';

const spec = defineGptSpec({
  vocabSize: 16,
  seqLen: 6,
  dModel: 8,
  nHeads: 2,
  nLayers: 3,
  dFF: 16,
  tieEmbeddings: false,
});

describe('layer modules', () => {
  for (const recompute of [[], ['h.0', 'h.1.attn', 'h.2.mlp'], ['h.0.attn.core', 'h.2.attn.core']]) {
    it(`forward and backward depend only on declared values (recompute: [${recompute.join(', ')}])`, () => {
      const { core, trace } = emitTrainingGraph({ spec, recompute, mode: 'gradients' });
      const external = new Set([...core.inputs.map((i) => i.name), ...core.initializers.map((t) => t.name!)]);
      const producer = new Map<string, string>();
      for (const n of core.nodes) for (const o of n.outputs) producer.set(o, n.name);
      let checkedNodes = 0;
      for (const t of trace) {
        for (const [phase, allowed] of [
          ['fwd', new Set([t.input])],
          ['bwd', new Set([...Object.values(t.saved), ...(t.dy ? [t.dy] : [])])],
        ] as const) {
          const prefix = `${t.name}/${phase}/`;
          for (const n of core.nodes.filter((node) => node.name.startsWith(prefix))) {
            checkedNodes++;
            for (const inp of n.inputs) {
              const ok = external.has(inp) || allowed.has(inp) || (producer.get(inp) ?? '').startsWith(prefix);
              expect(ok, `${n.name} reads ${inp} (from ${producer.get(inp) ?? 'nowhere'})`).toBe(true);
            }
          }
        }
        const declared =
          t.name === 'wte+wpe' || t.name === 'lm_head' || t.name === 'ln_f' ? null : Object.keys(t.saved).length;
        // the block input and the mid-block residual
        if (declared !== null && recompute.includes(t.name)) expect(declared).toBe(2);
      }
      expect(checkedNodes).toBeGreaterThan(300);
    });
  }
});
