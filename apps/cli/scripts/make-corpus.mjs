// Writes assets/corpus/{train,val}.txt: the small text the init templates and the bundled example
// train on, so the main job runs offline. It is the project's own documentation (files given on the
// command line) followed by sentences generated from a fixed grammar with a fixed seed, so the
// output is the same on every machine. Usage:
//   node scripts/make-corpus.mjs ../../README.md /path/to/ARCHITECTURE.md ...
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const here = new URL('..', import.meta.url).pathname;
const docs = process.argv
  .slice(2)
  .map((p) => readFileSync(p, 'utf8').trim())
  .join('\n\n');

let state = 0x9e3779b9;
const rand = () => {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const subjects = [
  'the trainer',
  'the probe',
  'the search',
  'the session',
  'the store',
  'the pointer',
  'the resume scan',
  'the cache',
  'the run',
  'the child process',
];
const verbs = [
  'pushed',
  'verified',
  'pulled',
  'measured',
  'refused',
  'cached',
  'restored',
  'recomputed',
  'offloaded',
  'pruned',
];
const objects = [
  'the checkpoint',
  'every file',
  'the manifest',
  'the batch size',
  'the activations',
  'the optimizer state',
  'the last segment',
  'the stale pointer',
  'the peak memory',
  'the loss',
];
const reasons = [
  'because the hashes matched',
  'before the session ended',
  'so nothing was lost',
  'after the step finished',
  'while the device had room',
  'since the run fingerprint agreed',
  'when the budget allowed it',
  'once the upload was complete',
];
const templates = [
  () => `At step ${int(1, 400) * 10}, ${pick(subjects)} ${pick(verbs)} ${pick(objects)} ${pick(reasons)}.`,
  () => `Batch size ${2 ** int(0, 7)} fits: the peak was ${int(100, 900)} MiB against a budget of ${int(1, 16)} GiB.`,
  () => `Batch size ${2 ** int(3, 9)} did not fit: out of memory at ${int(1, 80)} GiB, so ${pick(subjects)} halved it.`,
  () => `The pointer moved to ckpt/checkpoint-${int(1, 90) * 20} after every file matched its manifest.`,
  () =>
    `Loss ${(int(120, 560) / 100).toFixed(2)} at step ${int(1, 999)}; ${pick(subjects)} ${pick(verbs)} ` +
    `${pick(objects)}.`,
  () => `If the session ends, ${pick(subjects)} resumes from the last verified checkpoint ${pick(reasons)}.`,
  () =>
    `Gradient checkpointing ${pick(['off', 'full', 'medium', 'selective'])} kept ${int(10, 95)}` +
    ` percent of the activations ${pick(reasons)}.`,
];
const sentences = (n) =>
  Array.from({ length: n }, () => pick(templates)())
    .join(' ')
    .replace(/(.{1,90})(\s|$)/g, '$1\n');

const train = `${docs}\n\n${sentences(900)}`;
const val = sentences(100);
mkdirSync(join(here, 'assets', 'corpus'), { recursive: true });
writeFileSync(join(here, 'assets', 'corpus', 'train.txt'), train);
writeFileSync(join(here, 'assets', 'corpus', 'val.txt'), val);
console.log(`train.txt ${Buffer.byteLength(train)} bytes, val.txt ${Buffer.byteLength(val)} bytes`);
