#!/usr/bin/env node
// A trainer whose costs are known by construction, for testing and benchmarking `soup probe --try`:
//   memory: it holds (micro_batch_size × per_sample_mib × ckpt_memory) MiB, touched, for the whole run
//   time:   every step takes step_ms + micro_batch_size × sample_ms × ckpt_time (a blocking sleep)
//           + micro_batch_size² × sample_sq_ms (default 0: a step whose cost grows faster than m is fastest per
//           sample below the largest m that fits)
// where ckpt_memory / ckpt_time apply with --grad_ckpt true (default 0.5 and 1.3: checkpointing
// halves the memory per sample and adds 30 % to the time). Nothing else: soup's tuner must find
// which configuration is fastest at a global batch from its own measurements.
// --hold_output true holds its lines until it exits, as a Python trainer's print() does when its
// stdout is a pipe (block-buffered): soup then cannot time its steps by its output.
// --stop_after N runs at most N steps and exits 0 whatever --max_steps says (0: no cap), as a
// trainer whose dataset ends first: its timing runs do not show their steps.
// --grow_per_sample_mib X adds micro_batch_size × X MiB more, touched, at every step after the
// first (a data-dependent peak: one step fits where eight do not).
//   node train.mjs --micro_batch_size 4 --grad_ckpt false --max_steps 9
const args = Object.fromEntries(
  process.argv.slice(2).flatMap((a, i, all) => (a.startsWith('--') ? [[a.slice(2), all[i + 1]]] : [])),
);
const num = (name, def) => {
  const v = args[name] ?? def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`--${name} must be a non-negative number (got ${v})`);
    process.exit(2);
  }
  return n;
};
// HF Trainer's names are accepted too (--per_device_train_batch_size; --gradient_accumulation_steps
// does not change a step's cost here); any other flag is refused, so a typo cannot go unnoticed.
const KNOWN = [
  'micro_batch_size',
  'per_device_train_batch_size',
  'gradient_accumulation_steps',
  'max_steps',
  'grad_ckpt',
  'per_sample_mib',
  'ckpt_memory',
  'step_ms',
  'sample_ms',
  'sample_sq_ms',
  'ckpt_time',
  'hold_output',
  'stop_after',
  'grow_per_sample_mib',
];
for (const k of Object.keys(args)) {
  if (!KNOWN.includes(k)) {
    console.error(`unknown flag --${k} (known: ${KNOWN.map((x) => `--${x}`).join(' ')})`);
    process.exit(2);
  }
}
const m = num('micro_batch_size', args.per_device_train_batch_size ?? 1);
const stopAfter = num('stop_after', 0);
const steps = stopAfter > 0 ? Math.min(num('max_steps', 1), stopAfter) : num('max_steps', 1);
const growBytes = Math.round(m * num('grow_per_sample_mib', 0) * 2 ** 20);
if (args.grad_ckpt !== undefined && args.grad_ckpt !== 'true' && args.grad_ckpt !== 'false') {
  console.error(`--grad_ckpt must be true or false (got ${args.grad_ckpt})`);
  process.exit(2);
}
const ckpt = args.grad_ckpt === 'true';
if (args.hold_output !== undefined && args.hold_output !== 'true' && args.hold_output !== 'false') {
  console.error(`--hold_output must be true or false (got ${args.hold_output})`);
  process.exit(2);
}
const heldLines = [];
const say = args.hold_output === 'true' ? (line) => heldLines.push(line) : (line) => console.log(line);
const mib = m * num('per_sample_mib', 24) * (ckpt ? num('ckpt_memory', 0.5) : 1);
const stepMs =
  num('step_ms', 20) + m * num('sample_ms', 20) * (ckpt ? num('ckpt_time', 1.3) : 1) + m * m * num('sample_sq_ms', 0);

// Touched (resident), in chunks of at most 256 MiB (one Buffer holds at most 4 GiB).
const held = [];
for (let left = Math.round(mib * 2 ** 20); left > 0; left -= 2 ** 28)
  held.push(Buffer.alloc(Math.min(left, 2 ** 28), 1));
let heldBytes = held.reduce((n, b) => n + b.length, 0);
const cell = new Int32Array(new SharedArrayBuffer(4));
for (let s = 1; s <= steps; s++) {
  if (s > 1 && growBytes > 0) {
    held.push(Buffer.alloc(growBytes, 1));
    heldBytes += growBytes;
  }
  Atomics.wait(cell, 0, 0, stepMs);
  say(`step ${s} micro_batch_size ${m} grad_ckpt ${ckpt} held ${heldBytes}`);
}
if (heldLines.length > 0) process.stdout.write(`${heldLines.join('\n')}\n`);
