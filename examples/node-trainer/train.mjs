#!/usr/bin/env node
// A small trainer with the command line of an HF Trainer script, built on @soup/onnx-train: a GPT on
// a tiny text, bit-reproducible on CPU (1 thread). It writes checkpoint-<step>/ folders the way HF
// Trainer does (files written in place, trainer_state.json last), resumes from
// --resume_from_checkpoint, and on SIGTERM saves the current step and exits 0.
//
//   node examples/node-trainer/train.mjs --output_dir out --per_device_train_batch_size 4 \
//     --max_steps 60 --save_steps 10 [--resume_from_checkpoint out/checkpoint-30]
//
// Test knobs (environment, so they stay out of the run fingerprint):
//   SOUP_EXAMPLE_STEP_DELAY_MS=n        sleep n ms after each step (a slower model)
//   SOUP_EXAMPLE_FAULT=crash-mid-save:S half-write checkpoint-S, then die with exit code 3
//   SOUP_EXAMPLE_FAULT=exit:S:C         print an error and exit with code C after step S
//   SOUP_EXAMPLE_FAULT=ignore-sigterm   keep training through SIGTERM
//   SOUP_EXAMPLE_FAULT=stop-at:S        SIGTERM to itself at step S (a scheduler's stop): saves, exits 0
//   SOUP_EXAMPLE_FAULT=crash-after-save:S  exit 3 right after checkpoint-S is written
//   SOUP_EXAMPLE_FAULT=sigkill-after-save:S  SIGKILL itself right after checkpoint-S is written
//   SOUP_EXAMPLE_FAULT=early-stop:S     stop at step S as HF's EarlyStoppingCallback does: checkpoint-S and the
//                                       top-level trainer_state.json say should_training_stop; exits 0
//   SOUP_EXAMPLE_FAULT=done-marker:S    stop at step S, save the finished model and write {output_dir}/soup_done
//   SOUP_EXAMPLE_FAULT=link-in-save     every checkpoint folder holds a dangling symbolic link (gone.bin)
//   SOUP_EXAMPLE_CAPACITY=C or S:C      the device holds micro-batches of at most C samples (from step S on: a
//                                       device that shrinks mid-run); a larger one asks for more memory than the
//                                       machine has, so the step dies with V8's real "RangeError: Array buffer
//                                       allocation failed" (uncaught: stack on stderr, exit 1)
// SOUP_EXAMPLE_EVAL_MEMORY=E:MB       an eval pass after step E (a worker process) holds MB MiB more (filled) for 1.5 s
// SOUP_EXAMPLE_STEP_MEMORY=S:MB       step S (before its checkpoint) holds MB MiB per sample of the micro-batch in a
//                                     worker process for 1.5 s: a data-dependent peak that a smaller micro-batch lowers
// --gradient_accumulation_steps a: each optimizer step accumulates a micro-batches of
// --per_device_train_batch_size m (the global batch is m × a); weights equal any other m × a' = m × a.
// Data parallel (torchrun's environment: WORLD_SIZE > 1, RANK, MASTER_ADDR, MASTER_PORT): every rank draws the
// same global batch G = m × a × WORLD_SIZE and runs its a micro-batches (rank r: the r-th run of a consecutive ones);
// the ranks all-gather their micro-batches' gradients over TCP (all-gather.mjs) and each sums all of them in
// micro-batch order, exactly as one process accumulates them: the weights are bit-identical to one process at the
// same G and m. Only rank 0 writes checkpoints and the final model; every rank resumes from
// --resume_from_checkpoint. A SIGTERM on any rank travels with the next exchange: all ranks stop after that same
// step and rank 0 saves it.
// --save_total_limit n (HF Trainer's flag): after each checkpoint-<step>/ save, the oldest folders beyond n are
// deleted at once (HF's _rotate_checkpoints, shutil.rmtree); 0 keeps them all.
// --checkpoint_format file: Lightning-style {output_dir}/epoch=0-step=<step>.ckpt files (one file each,
// written in place); --resume_from_checkpoint then takes such a file.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { defineGptSpec, Trainer } from '@soup/onnx-train';
import { joinGroup } from './all-gather.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
  return v;
};
const num = (name, fallback) => {
  const v = Number(opt(name, String(fallback)));
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be an integer >= 0`);
  return v;
};

const outputDir = opt('output_dir', 'output');
const batchSize = num('per_device_train_batch_size', 4);
const gradAccum = Math.max(1, num('gradient_accumulation_steps', 1));
const maxSteps = num('max_steps', 60);
const saveSteps = num('save_steps', 10);
const resumeFrom = opt('resume_from_checkpoint', '');
const seed = num('seed', 0);
const dModel = num('d_model', 32);
const nLayers = num('n_layers', 2);
const seqLen = num('seq_len', 32);
const textFile = opt('text', '');
const checkpointFormat = opt('checkpoint_format', 'folder');
const saveTotalLimit = num('save_total_limit', 0);
const delayMs = Number(process.env.SOUP_EXAMPLE_STEP_DELAY_MS ?? 0);
const fault = process.env.SOUP_EXAMPLE_FAULT ?? '';
const worldSize = Number(process.env.WORLD_SIZE ?? 1);
const rank = Number(process.env.RANK ?? 0);
if (!Number.isInteger(worldSize) || worldSize < 1 || !Number.isInteger(rank) || rank < 0 || rank >= worldSize)
  throw new Error(`WORLD_SIZE must be >= 1 and 0 <= RANK < WORLD_SIZE (got RANK ${rank} of ${worldSize})`);

const TEXT = textFile
  ? readFileSync(textFile, 'utf8')
  : Array.from(
      { length: 40 },
      (_, i) => `Line ${i}: the soup simmers while the trainer saves its state and resumes where it stopped.\n`,
    ).join('');

let stopRequested = false;
process.on('SIGTERM', () => {
  if (fault === 'ignore-sigterm') {
    process.stdout.write('trainer: SIGTERM ignored\n');
    return;
  }
  process.stdout.write('trainer: SIGTERM: saving after this step\n');
  stopRequested = true;
});

const spec = defineGptSpec({ vocabSize: 256, seqLen, dModel, nHeads: 2, nLayers });
// --gradient_checkpointing true|false (HF Trainer's flag): true recomputes every block in the backward pass.
const gradientCheckpointing = opt('gradient_checkpointing', 'false');
if (gradientCheckpointing !== 'true' && gradientCheckpointing !== 'false')
  throw new Error(`--gradient_checkpointing must be true or false (got ${gradientCheckpointing})`);
if (args.includes('--gradient_checkpointing')) console.log(`gradient_checkpointing ${gradientCheckpointing}`);
const options = {
  spec,
  text: TEXT,
  batchSize: batchSize * gradAccum * worldSize,
  microBatchSize: batchSize,
  totalSteps: maxSteps,
  lr: 3e-3,
  warmupSteps: 2,
  seed,
  intraOpNumThreads: 1,
  evalFraction: 0.1,
  gradientCheckpointing: gradientCheckpointing === 'true',
};
/**
 * A file checkpoint is a zip archive (stored, no compression) of the three checkpoint files, as torch.save writes a
 * zip.
 */
const CRC = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (b) => {
  let c = 0xffffffff;
  for (const x of b) c = CRC[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
export function zipFiles(files) {
  const parts = [];
  const central = [];
  let at = 0;
  for (const [name, data] of files) {
    const n = Buffer.from(name);
    const h = Buffer.alloc(30);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(20, 4);
    h.writeUInt32LE(crc32(data), 14);
    h.writeUInt32LE(data.length, 18);
    h.writeUInt32LE(data.length, 22);
    h.writeUInt16LE(n.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(20, 4);
    c.writeUInt16LE(20, 6);
    c.writeUInt32LE(crc32(data), 16);
    c.writeUInt32LE(data.length, 20);
    c.writeUInt32LE(data.length, 24);
    c.writeUInt16LE(n.length, 28);
    c.writeUInt32LE(at, 42);
    parts.push(h, n, data);
    central.push(c, n);
    at += 30 + n.length + data.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...parts, cd, end]);
}
export function unzipFiles(buf) {
  const out = new Map();
  for (let at = 0; buf.readUInt32LE(at) === 0x04034b50; ) {
    const size = buf.readUInt32LE(at + 18),
      nameLen = buf.readUInt16LE(at + 26),
      extra = buf.readUInt16LE(at + 28);
    const name = buf.subarray(at + 30, at + 30 + nameLen).toString();
    const start = at + 30 + nameLen + extra;
    out.set(name, buf.subarray(start, start + size));
    at = start + size;
  }
  return out;
}
function unpackFile(file) {
  const dir = join(outputDir, `.unpacked-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, data] of unzipFiles(readFileSync(file))) writeFileSync(join(dir, name), data);
  return dir;
}
const resumeIsFile = resumeFrom !== '' && statSync(resumeFrom).isFile();
const resumeDir = resumeIsFile ? unpackFile(resumeFrom) : resumeFrom;
const trainer = resumeFrom
  ? await Trainer.fromCheckpoint({ ...options, dir: resumeDir })
  : await Trainer.create(options);
if (resumeIsFile) rmSync(resumeDir, { recursive: true, force: true });
process.stdout.write(
  `trainer: ${resumeFrom ? `resumed from ${resumeFrom} at step ${trainer.state.step}` : 'fresh start'}, batch ` +
    `${batchSize}${gradAccum > 1 ? ` × ${gradAccum} accumulated` : ''}` +
    `${worldSize > 1 ? ` × ${worldSize} ranks (rank ${rank})` : ''}, ${maxSteps} steps\n`,
);

// Data parallel: the stop every rank agreed on at the last exchange (a SIGTERM on any rank).
let agreedStop = false;
const group =
  worldSize > 1
    ? await joinGroup({
        rank,
        worldSize,
        addr: process.env.MASTER_ADDR ?? '127.0.0.1',
        port: Number(process.env.MASTER_PORT ?? 29500),
      })
    : undefined;
const dataParallel = group && {
  rank,
  worldSize,
  exchange: async (mine) => {
    const { stop, parts } = await group.exchange(stopRequested, mine);
    agreedStop = stop;
    return parts;
  },
};
const stopping = () => (group ? agreedStop : stopRequested);

const capacity = /^(?:(\d+):)?(\d+)$/.exec(process.env.SOUP_EXAMPLE_CAPACITY ?? '');
const evalMemory = /^(\d+):(\d+)$/.exec(process.env.SOUP_EXAMPLE_EVAL_MEMORY ?? '');
const stepMemory = /^(\d+):(\d+)$/.exec(process.env.SOUP_EXAMPLE_STEP_MEMORY ?? '');
/** MiB held (filled) by a worker process for 1.5 s, as a data loader or an eval harness holds it. */
function holdInWorker(mib) {
  const hold = `const b = Buffer.alloc(${mib} * 2 ** 20, 1); setTimeout(() => console.log(b.length), 1500);`;
  spawnSync(process.execPath, ['-e', hold], { stdio: 'inherit' });
}
/** The device's limit: a micro-batch above it needs more memory than there is (a real allocation failure). */
function allocateActivations(step) {
  if (!capacity || step <= Number(capacity[1] ?? 0) || batchSize <= Number(capacity[2])) return;
  const bytes = 2 ** 44 * batchSize; // far beyond this machine: V8 cannot back it
  new ArrayBuffer(bytes);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** HF Trainer style: files written into checkpoint-<step>/ one by one, trainer_state.json last. */
function saveCheckpoint(step) {
  if (rank !== 0) return; // one writer: rank 0
  const staging = join(outputDir, `.staging-${process.pid}`);
  trainer.saveCheckpoint(staging);
  if (checkpointFormat === 'file') {
    const files = ['model.safetensors', 'optimizer.safetensors', 'trainer_state.json'].map((f) => [
      f,
      readFileSync(join(staging, f)),
    ]);
    const file = join(outputDir, `epoch=0-step=${step}.ckpt`);
    writeFileSync(file, zipFiles(files)); // in place, as Lightning writes

    rmSync(staging, { recursive: true, force: true });
    process.stdout.write(`trainer: saved ${file}\n`);
    afterSave(step);
    return;
  }
  const dir = join(outputDir, `checkpoint-${step}`);
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(staging, 'model.safetensors'), join(dir, 'model.safetensors'));
  if (fault === `crash-mid-save:${step}`) {
    const opt = readFileSync(join(staging, 'optimizer.safetensors'));
    writeFileSync(join(dir, 'optimizer.safetensors'), opt.subarray(0, opt.length >> 1));
    process.stderr.write(`RuntimeError: simulated crash while writing ${dir}/optimizer.safetensors\n`);
    process.exit(3);
  }
  copyFileSync(join(staging, 'optimizer.safetensors'), join(dir, 'optimizer.safetensors'));
  if (fault === 'link-in-save') symlinkSync('nowhere.bin', join(dir, 'gone.bin'));
  markStopped(join(staging, 'trainer_state.json'));
  copyFileSync(join(staging, 'trainer_state.json'), join(dir, 'trainer_state.json'));
  rmSync(staging, { recursive: true, force: true });
  process.stdout.write(`trainer: saved ${dir}\n`);
  rotateCheckpoints();
  afterSave(step);
}

/** --save_total_limit: the oldest checkpoint-<step>/ folders beyond the limit go, as HF Trainer rotates them. */
function rotateCheckpoints() {
  if (saveTotalLimit <= 0) return;
  const steps = readdirSync(outputDir)
    .map((n) => Number(/^checkpoint-(\d+)$/.exec(n)?.[1]))
    .filter((n) => Number.isInteger(n))
    .sort((a, b) => a - b);
  for (const old of steps.slice(0, -saveTotalLimit)) rmSync(join(outputDir, `checkpoint-${old}`), { recursive: true });
}

/** HF's EarlyStoppingCallback: the saved TrainerControl says should_training_stop, and its own state that it fired. */
let stoppedEarly = false;
function markStopped(file) {
  if (!stoppedEarly || !fault.startsWith('early-stop:')) return;
  const state = JSON.parse(readFileSync(file, 'utf8'));
  state.stateful_callbacks = {
    TrainerControl: { args: { should_training_stop: true }, attributes: {} },
    EarlyStoppingCallback: {
      args: { early_stopping_patience: 1, early_stopping_threshold: 0 },
      attributes: { early_stopping_patience_counter: 1 },
    },
  };
  writeFileSync(file, JSON.stringify(state, null, 2));
}

function afterSave(step) {
  if (fault === `crash-after-save:${step}`) {
    process.stderr.write(`RuntimeError: simulated crash right after saving step ${step}\n`);
    process.exit(3);
  }
  if (fault === `sigkill-after-save:${step}`) process.kill(process.pid, 'SIGKILL');
}

let savedAt = trainer.state.step;
while (trainer.state.step < maxSteps) {
  const t0 = performance.now();
  allocateActivations(trainer.state.step + 1);
  const log = await (dataParallel ? trainer.step({ dataParallel }) : trainer.step());
  const ms = performance.now() - t0;
  process.stdout.write(`step ${log.step} loss ${log.loss.toFixed(4)} ms ${ms.toFixed(2)}\n`);
  const m = /^exit:(\d+):(\d+)$/.exec(fault);
  if (m && log.step === Number(m[1])) {
    process.stderr.write(`ValueError: simulated failure at step ${log.step}\n`);
    process.exit(Number(m[2]));
  }
  if (stepMemory && log.step === Number(stepMemory[1])) {
    process.stdout.write(`trainer: step ${log.step} holds ${Number(stepMemory[2]) * batchSize} MiB\n`);
    holdInWorker(Number(stepMemory[2]) * batchSize);
  }
  if (saveSteps > 0 && log.step % saveSteps === 0) {
    saveCheckpoint(log.step);
    savedAt = log.step;
  }
  if (evalMemory && log.step === Number(evalMemory[1])) {
    // An eval worker (a child process, as a data loader or eval harness is): its memory is gone when it exits.
    process.stdout.write(`trainer: eval after step ${log.step} holds ${evalMemory[2]} MiB\n`);
    holdInWorker(Number(evalMemory[2]));
    process.stdout.write(`trainer: eval done\n`);
  }
  if (fault === `stop-at:${log.step}`) {
    process.kill(process.pid, 'SIGTERM');
    await sleep(50); // the handler runs on the event loop
  }
  if (stopping()) break;
  if (fault === `early-stop:${log.step}` || fault === `done-marker:${log.step}`) {
    process.stdout.write(`trainer: stopping early at step ${log.step}\n`);
    stoppedEarly = true;
    break;
  }
  if (delayMs > 0) await sleep(delayMs);
}
const step = trainer.state.step;
if (savedAt !== step || stoppedEarly) saveCheckpoint(step);
group?.close();
if (stopping() && step < maxSteps) {
  process.stdout.write(`trainer: stopped at step ${step} (checkpoint saved)\n`);
  await trainer.close();
  process.exit(0);
}
if (checkpointFormat === 'file' || rank !== 0) {
  // Lightning: the last .ckpt is the finished model; ranks other than 0 write nothing.
  await trainer.close();
  process.stdout.write(`trainer: done at step ${step}\n`);
  process.exit(0);
}
// The finished model at the top of the output folder, as trainer.save_model(output_dir) does.
const staging = join(outputDir, `.final-${process.pid}`);
trainer.saveCheckpoint(staging);
markStopped(join(staging, 'trainer_state.json'));
for (const f of ['model.safetensors', 'trainer_state.json']) copyFileSync(join(staging, f), join(outputDir, f));
rmSync(staging, { recursive: true, force: true });
if (fault.startsWith('done-marker:')) writeFileSync(join(outputDir, 'soup_done'), '');
await trainer.close();
process.stdout.write(`trainer: done at step ${step}\n`);
