// The switch model of a segmented step: every segment model behind an `If`, so one ONNX Runtime session runs them.
import { Emitter, GraphCore, type FloatDType } from './_graph';
import { OnnxDataType, type GraphDef, type NodeDef, type ValueInfoDef } from './_proto';
import type { SegmentModel } from './_segments';

/** One model holding every segment; a run selects one with the `segment` input. */
export interface SwitchModel {
  bytes: Uint8Array;
  /** Every input of the model: `segment`, then the union of the segments' inputs. */
  inputs: ValueInfoDef[];
  /** Per segment: its input names and its outputs (model output name → the segment's own name). */
  segments: { inputNames: string[]; outputs: Map<string, string> }[];
}

/**
 * Puts every segment into one model, each as the then-branch of an `If` on `segment == k`, so
 * one session (one memory arena, one thread pool) runs them all: a run computes only the
 * selected segment; the other `If`s take their else-branch, which yields empty tensors. The
 * segments' inputs become the model's inputs (shared by name: a block parameter `ln_1.weight`
 * is the same input for every block segment); a run feeds the selected segment's inputs and
 * placeholders for the others. Output `k:<name>` is segment k's output `<name>`.
 */
export function buildSwitchModel(dtype: FloatDType, segments: readonly SegmentModel[]): SwitchModel {
  const main = new GraphCore(dtype);
  const root = new Emitter(main, '');
  const selector = main.addInput('segment', OnnxDataType.INT64, []);
  const inputs = new Map<string, ValueInfoDef>();
  const info: SwitchModel['segments'] = [];
  segments.forEach((seg, k) => {
    const g = seg.graph;
    for (const i of g.inputs) {
      const seen = inputs.get(i.name);
      if (!seen) {
        inputs.set(i.name, i);
        main.addInput(i.name, i.dataType, i.shape ?? []);
      } else if (seen.dataType !== i.dataType || JSON.stringify(seen.shape) !== JSON.stringify(i.shape)) {
        throw new Error(`segment input ${i.name} is declared twice with different types`);
      }
    }
    // Values produced inside the segment get a prefix (a subgraph must not reuse outer names);
    // its inputs stay as they are and resolve to the model's inputs.
    const prefix = `s${k}/`;
    const local = new Set<string>([...g.initializers.map((t) => t.name!), ...g.nodes.flatMap((n) => n.outputs)]);
    const rename = (v: string): string => (local.has(v) ? prefix + v : v);
    const nodes: NodeDef[] = g.nodes.map((n) => ({
      ...n,
      name: prefix + n.name,
      inputs: n.inputs.map(rename),
      outputs: n.outputs.map(rename),
    }));
    // Both branches yield each output with the same rank: the else-branch an empty tensor (a
    // single zero for a scalar); every dimension symbolic, as the two branches differ in size.
    const rank = (o: ValueInfoDef): number => (o.shape ?? []).length;
    const anyShape = (o: ValueInfoDef, j: number): string[] =>
      Array.from({ length: rank(o) }, (_, d) => `s${k}_${j}_${d}`);
    const thenBranch: GraphDef = {
      name: `${g.name}_then`,
      nodes,
      initializers: g.initializers.map((t) => ({ ...t, name: rename(t.name!) })),
      inputs: [],
      outputs: g.outputs.map((o, j) => ({ name: rename(o.name), dataType: o.dataType, shape: anyShape(o, j) })),
    };
    const elseBranch: GraphDef = {
      name: `${g.name}_else`,
      nodes: g.outputs.map((o) => ({
        opType: 'Constant',
        name: `${prefix}else/${o.name}`,
        inputs: [],
        outputs: [`${prefix}else/${o.name}`],
        attributes: {
          value: {
            kind: 'tensor',
            value: {
              dataType: o.dataType,
              dims: new Array<number>(rank(o)).fill(0),
              raw: new Uint8Array(rank(o) === 0 ? (o.dataType === OnnxDataType.FLOAT ? 4 : 8) : 0),
            },
          },
        },
      })),
      initializers: [],
      inputs: [],
      outputs: g.outputs.map((o, j) => ({
        name: `${prefix}else/${o.name}`,
        dataType: o.dataType,
        shape: anyShape(o, j),
      })),
    };
    const cond = root.op1('Equal', [selector, root.i64([k], [])]);
    const outNames = g.outputs.map((o) => `${k}:${o.name}`);
    root.op(
      'If',
      [cond],
      { then_branch: { kind: 'graph', value: thenBranch }, else_branch: { kind: 'graph', value: elseBranch } },
      { outputNames: outNames },
    );
    g.outputs.forEach((o, j) => {
      main.addOutput(outNames[j]!, o.dataType, anyShape(o, j));
    });
    info.push({
      inputNames: g.inputs.map((i) => i.name),
      outputs: new Map(g.outputs.map((o, j) => [outNames[j]!, o.name])),
    });
  });
  const bytes = main.encode({
    graphName: 'soup_gpt_segments',
    producerVersion: 'graph-v1',
    docString: '@soup/onnx-train segmented step',
  });
  return { bytes, inputs: main.inputs.slice(), segments: info };
}
