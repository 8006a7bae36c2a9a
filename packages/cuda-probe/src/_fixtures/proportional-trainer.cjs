// A trainer for tests: holds batch_size × MIB_PER_SAMPLE MiB (touched, so it is resident) for
// HOLD_MS, then exits 0. Misbehaviours, each switched on by the environment:
//   EDGE=N           above N it raises a Python-style "MemoryError" (exit 1): a deterministic edge
//   FLAKY=path       every other run (a counter in that file) kills itself with SIGKILL first
//   KILL_AT=N        at N and above it kills itself with SIGKILL (not memory: its peak is small)
//   OOM_TEXT_AT=N    at N and above it prints a CUDA out-of-memory error and still exits 0
//   QUAD_KIB=K       adds b² × K KiB (memory quadratic in the batch)
//   FRACTION_OF=B    allocates FRACTION × B bytes instead, then kills itself (a kill near the budget)
//   WORLD_SIZE=N     a data-parallel rank: holds 1/N of the batch's memory (the launcher's other ranks the rest)
const fs = require('node:fs');
const b = Number(process.argv[2]);
const env = process.env;
const MiB = 1024 * 1024;
if (env.FLAKY) {
  let n = 0;
  try {
    n = Number(fs.readFileSync(env.FLAKY, 'utf8')) || 0;
  } catch {}
  fs.writeFileSync(env.FLAKY, String(n + 1));
  if (n % 2 === 0) process.kill(process.pid, 'SIGKILL');
}
if (env.FRACTION_OF) {
  const keep = Buffer.alloc(Math.floor(Number(env.FRACTION) * Number(env.FRACTION_OF)) - 48 * MiB, 1);
  setTimeout(() => {
    void keep;
    process.kill(process.pid, 'SIGKILL');
  }, 400);
} else {
  if (env.KILL_AT && b >= Number(env.KILL_AT)) process.kill(process.pid, 'SIGKILL');
  if (env.EDGE && b > Number(env.EDGE)) {
    console.error(
      'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nMemoryError: Unable to allocate ' +
        b +
        ' samples',
    );
    process.exit(1);
  }
  // QUAD_KIB: an attention-like term, b² × QUAD_KIB KiB, on top of the linear part.
  const bytes = b * Number(env.MIB_PER_SAMPLE || 4) * MiB + b * b * Number(env.QUAD_KIB || 0) * 1024;
  const keep = Buffer.alloc(Math.floor(bytes / Number(env.WORLD_SIZE || 1)), 1);
  if (env.OOM_TEXT_AT && b >= Number(env.OOM_TEXT_AT))
    console.log('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (skipping this batch)');
  setTimeout(
    () => {
      void keep;
      process.exit(0);
    },
    Number(env.HOLD_MS || 200),
  );
}
