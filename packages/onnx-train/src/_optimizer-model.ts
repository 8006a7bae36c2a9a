// The optimizer alone as one graph: global gradient norm, clipping and AdamW over gradients given
// as inputs. The fused step runs it once after accumulating the gradients of its micro-batches
// (the `gradients` graph per micro-batch), with the same emitter as the fused `train` graph, so an
// accumulated step updates exactly as one step over the whole batch would.
import { Emitter, GraphCore, type FloatDType } from './_graph';
import { OnnxDataType } from './_proto';
import { emitAdamW } from './build-training-model';
import type { ResolvedAdamW } from './adamw-options';
import type { ParamSpec } from './parameter-specs';
import { tensorNames } from './tensor-names';

/**
 * Inputs `lr`, `step`, every parameter, `adam_m.*`, `adam_v.*` and `grad.*`; outputs `grad_norm`
 * and `updated.*` (parameters and moments), as the fused `train` graph names them.
 */
export function buildOptimizerModel(params: readonly ParamSpec[], dtype: FloatDType, adamw: ResolvedAdamW): Uint8Array {
  const core = new GraphCore(dtype);
  const ft = core.floatType;
  const lr = core.addInput(tensorNames.lr, ft, []);
  const step = core.addInput(tensorNames.step, OnnxDataType.INT64, []);
  const paramValues = new Map<string, string>();
  for (const p of params) paramValues.set(p.name, core.addInput(p.name, ft, p.shape));
  for (const p of params) core.addInput(tensorNames.adamM(p.name), ft, p.shape);
  for (const p of params) core.addInput(tensorNames.adamV(p.name), ft, p.shape);
  const grads = new Map<string, string>();
  for (const p of params) grads.set(p.name, core.addInput(tensorNames.grad(p.name), ft, p.shape));
  const opt = new Emitter(core, '').scope('optimizer');
  const squares = new Map<string, string>();
  const sumSquares = params.map((p) => {
    const g = grads.get(p.name)!;
    const sq = opt.mul(g, g);
    squares.set(p.name, sq);
    return opt.reduceSum(sq, [], false);
  });
  const gradNorm = opt.op1(
    'Sqrt',
    [sumSquares.length === 1 ? sumSquares[0]! : opt.op1('Sum', sumSquares)],
    {},
    tensorNames.gradNorm,
  );
  core.addOutput(tensorNames.gradNorm, ft, []);
  emitAdamW(opt, { params: [...params], grads, squares, paramValues, gradNorm, lr, step, adamw });
  return core.encode({
    graphName: 'soup_gpt_optimizer',
    producerVersion: 'graph-v1',
    docString: `@soup/onnx-train optimizer: dtype=${dtype}`,
  });
}
