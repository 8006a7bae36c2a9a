// soup train's trainer child: @soup/onnx-train's runTrainChild, given soup's out-of-memory judge, its full-disk
// error, its micro-batch text and its exit codes (the supervisor launches this file, built beside the CLI's own).
//   node train-child.js <job.json> --output-dir <dir> --micro-batch-size <m> [--resume-from <dir>]
import { formatMicroBatch } from '@soup/batch-probe';
import { stepOomLine } from '@soup/cuda-probe';
import { DiskFullError, isDiskFull } from '@soup/hub-ckpt';
import { runTrainChild } from '@soup/onnx-train';
import { EXIT_CODES, exitCodeFor } from './exit-codes';

runTrainChild({
  argv: process.argv.slice(2),
  oomLine: stepOomLine,
  diskFull: (err, p) => (isDiskFull(err) ? new DiskFullError({ ...p, cause: err }) : null),
  microBatchText: formatMicroBatch,
  failedExitCode: EXIT_CODES.train,
  // The error's own exit code (a full disk 12, a missing device 9), as the in-process path gave it; else a failed run.
  exitCodeOf: (err) => (err instanceof DiskFullError ? EXIT_CODES.diskFull : trainCode(exitCodeFor(err))),
});

function trainCode(code: number): number {
  return code === EXIT_CODES.internal ? EXIT_CODES.train : code;
}
