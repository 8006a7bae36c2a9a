// Runs one @soup/onnx-train step inside the probe worker (filled in against onnx-train's API).
import type { TrainStepJob, WorkerJob } from './_protocol';

export async function prepareTrainStepRunner(
  _job: WorkerJob,
  _work: TrainStepJob,
): Promise<{ feedBytes: number; notes: string[]; step: () => Promise<void> }> {
  throw new Error('train-step probe: @soup/onnx-train integration pending');
}
