// The README's "First hour", run as written: init → train → run → ckpt status → ckpt pull, each a real `soup`
// process in one empty folder, every line the README shows found in what that command printed. Five commands
// and two trainings make it longer than a unit test (about 15 s a twin): only the whole path proves the README.
// `soup run` gets the PyTorch trainer the README names where `$PYTHON -c "import torch"` works (default
// /usr/bin/python3), else it is skipped with the reason printed; the Node twin (examples/node-trainer, the same
// command line) always runs.
import { runNode, useTempDir } from '@soup/test-utils';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { linesNotShown, readmeSteps } from '../test/readme-steps';
import { NODE_TRAINER, PYTHON, SOUP_BIN, sha256File, soupEnv, TORCH_TRAINER, torchMissing } from '../test/run-helpers';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const steps = readmeSteps(readFileSync(README, 'utf8'), '## First hour');

const missing = await torchMissing();
if (missing) process.stdout.write(`newcomer-path.e2e.test.ts: PyTorch twin skipped: ${missing}\n`);

/** Runs the README commands in `cwd`; its trainer (`python3 examples/torch-trainer/train.py`) becomes `trainer`. */
async function walk(trainer: string[]): Promise<void> {
  const cwd = useTempDir('soup-newcomer-');
  const env = soupEnv(cwd, { ORT_DISABLE_TELEMETRY: '1' });
  for (const { argv, shown } of steps) {
    const command = argv.join(' ');
    const i = argv.indexOf('python3');
    const args = i >= 0 && argv[i + 1] === 'examples/torch-trainer/train.py' ? argv.toSpliced(i, 2, ...trainer) : argv;
    const r = await runNode([SOUP_BIN, ...args.slice(1)], { cwd, env, timeoutMs: 90_000 });
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.code, `${command}\n${output.slice(-4000)}`).toBe(0);
    expect(linesNotShown(shown, output), `README lines that \`${command}\` did not print:\n${output}`).toEqual([]);
  }
  // What `ckpt pull` brought back is the model the trainer finished with.
  expect(sha256File(join(cwd, 'model', 'model.safetensors'))).toBe(
    sha256File(join(cwd, 'output', 'model.safetensors')),
  );
}

describe('[slow] the README newcomer path', { timeout: 120_000 }, () => {
  it('shows init, train, run, ckpt status and ckpt pull, in that order, each with the lines it prints', () => {
    const commands = steps.map(({ argv }) => argv.slice(0, argv[1] === 'ckpt' ? 3 : 2).join(' '));
    expect(commands).toEqual(['soup init', 'soup train', 'soup run', 'soup ckpt status', 'soup ckpt pull']);
    expect(steps.every(({ shown }) => shown.length > 0)).toBe(true);
  });

  it('runs as the README shows, with the Node twin of the PyTorch trainer', async () => {
    await walk([process.execPath, NODE_TRAINER]);
  });

  it.skipIf(missing !== null)('runs as the README shows, with the PyTorch trainer', async () => {
    await walk([PYTHON, TORCH_TRAINER]);
  });
});
