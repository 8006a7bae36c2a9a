// soup train's trainer child: @soup/onnx-train's runTrainChild, given soup's out-of-memory judge, its full-disk
// error, its micro-batch text and its exit codes (the supervisor launches this file, built beside the CLI's own).
//   node train-child.js <job.json> --output-dir <dir> --micro-batch-size <m> [--resume-from <dir>]

// Before anything loads: SIGUSR1 would open Node's debugger and SIGUSR2 would kill the child mid-step. A platform
// that signals every process of a job (SLURM's --signal without B:) reaches soup too, and soup sends SIGTERM here.
for (const sig of ['SIGUSR1', 'SIGUSR2'] as const) process.on(sig, () => {});

const { formatMicroBatch } = await import('@soup/batch-probe');
const { stepOomLine } = await import('@soup/cuda-probe');
const { DiskFullError, isDiskFull } = await import('@soup/hub-ckpt');
const { runTrainChild } = await import('@soup/onnx-train');
const { EXIT_CODES, exitCodeFor } = await import('./exit-codes');

const trainCode = (code: number): number => (code === EXIT_CODES.internal ? EXIT_CODES.train : code);

export {};

runTrainChild({
  argv: process.argv.slice(2),
  oomLine: stepOomLine,
  diskFull: (err, p) => (isDiskFull(err) ? new DiskFullError({ ...p, cause: err }) : null),
  microBatchText: formatMicroBatch,
  failedExitCode: EXIT_CODES.train,
  // The error's own exit code (a full disk 12, a missing device 9), as the in-process path gave it; else a failed run.
  exitCodeOf: (err) => (err instanceof DiskFullError ? EXIT_CODES.diskFull : trainCode(exitCodeFor(err))),
});
