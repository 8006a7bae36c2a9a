// A one-node ONNX model `c = a @ b` (n × n, float32): the GEMM the bench's MFU is measured against.
import { Emitter, GraphCore } from '../src/_graph';
import { OnnxDataType } from '../src/_proto';

export function gemmModel(n: number): Uint8Array {
  const core = new GraphCore('float32');
  const e = new Emitter(core, '');
  const a = core.addInput('a', OnnxDataType.FLOAT, [n, n]);
  const b = core.addInput('b', OnnxDataType.FLOAT, [n, n]);
  e.op1('MatMul', [a, b], {}, 'c');
  core.addOutput('c', OnnxDataType.FLOAT, [n, n]);
  return core.encode({ graphName: 'gemm', producerVersion: 'bench' });
}
