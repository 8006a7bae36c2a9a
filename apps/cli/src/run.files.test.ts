// `soup run` with file checkpoints (Lightning's ModelCheckpoint: `{output_dir}/epoch=0-step=40.ckpt`):
// pushed, pulled back, {resume_from} = the file; two sessions end bit-identical to an uninterrupted run.
// The Node twin always runs; the PyTorch twin runs where `$PYTHON -c "import torch"` works.
import { runProcess, useTempDir } from '@soup/test-utils';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  NODE_TRAINER,
  pointerOf,
  PYTHON,
  soupEnv,
  soupRun,
  soupRunUntil,
  TORCH_TRAINER,
  torchMissing,
} from '../test/run-helpers';

const FILE_OPTIONS = [
  '--repo',
  'file://store',
  '--output-dir',
  'out',
  '--checkpoint-glob',
  'epoch=*.ckpt',
  '--horizon',
  '60',
  '--settle',
  '600ms',
  '--poll',
  '100ms',
];

/** The newest `epoch=0-step=N.ckpt` in a folder. */
function newestCkpt(dir: string): string {
  const files = readdirSync(dir).filter((n) => /^epoch=\d+-step=\d+\.ckpt$/.test(n));
  files.sort((a, b) => Number(/step=(\d+)/.exec(a)![1]) - Number(/step=(\d+)/.exec(b)![1]));
  return join(dir, files.at(-1)!);
}

/** The Node twin's .ckpt is a stored zip of its checkpoint files (as torch.save writes a zip): the model's sha256. */
function nodeModelSha(file: string): string {
  const buf = readFileSync(file);
  for (let at = 0; buf.readUInt32LE(at) === 0x04034b50; ) {
    const size = buf.readUInt32LE(at + 18);
    const nameLen = buf.readUInt16LE(at + 26);
    const start = at + 30 + nameLen + buf.readUInt16LE(at + 28);
    if (buf.subarray(at + 30, at + 30 + nameLen).toString() === 'model.safetensors')
      return createHash('sha256')
        .update(buf.subarray(start, start + size))
        .digest('hex');
    at = start + size;
  }
  throw new Error(`${file}: no model.safetensors in the zip`);
}

async function twoSessions(p: {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  modelSha: (file: string) => Promise<string> | string;
}): Promise<void> {
  const { cwd } = p;
  // The reference: the same trainer alone, uninterrupted.
  const refOut = join(cwd, 'reference-out');
  const refArgv = p.argv
    .map((a) => a.replace('{output_dir}', refOut).replace('{max_steps}', '60'))
    .filter((a, i, all) => a !== '{resume_from}' && all[i + 1] !== '{resume_from}');
  const ref = await runProcess(refArgv[0]!, refArgv.slice(1), { cwd, env: p.env, timeoutMs: 240_000 });
  expect(ref.code, ref.stderr).toBe(0);
  const refSha = await p.modelSha(newestCkpt(refOut));

  // Session 1 ends (SIGTERM, as a scheduler ends it) once soup has pushed a checkpoint: however fast the machine,
  // the session ends mid-run (a --time-limit could outlast the whole run on an idle machine).
  const first = await soupRunUntil(cwd, FILE_OPTIONS, p.argv, p.env, /pushed ckpt\/checkpoint-\d+/);
  first.child.kill('SIGTERM');
  const s1 = await first.exited;
  expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
  const saved = pointerOf(join(cwd, 'store'));
  expect(saved, s1.stdout + s1.stderr).not.toBeNull();
  expect(saved!.step).toBeGreaterThan(0);
  expect(saved!.step).toBeLessThan(60);
  expect(s1.stderr).not.toContain('is a file');
  expect(readdirSync(join(cwd, 'store', 'ckpt', `checkpoint-${saved!.step}`))).toContain(
    `epoch=0-step=${saved!.step}.ckpt`,
  );

  rmSync(join(cwd, 'out'), { recursive: true, force: true }); // a fresh machine
  const s2 = await soupRun(cwd, FILE_OPTIONS, p.argv, p.env);
  expect(s2.code, s2.stderr).toBe(0);
  expect(s2.stdout).toContain(
    `trainer: resumed from ${join(cwd, 'out', `checkpoint-${saved!.step}`, `epoch=0-step=${saved!.step}.ckpt`)}` +
      ` at step ${saved!.step}`,
  );
  expect(s2.stdout).toMatch(/run complete: pushed final\/ .*step 60, verified\) with a terminal pointer/);
  expect(readdirSync(join(cwd, 'store', 'final'))).toContain('epoch=0-step=60.ckpt');
  expect(await p.modelSha(join(cwd, 'store', 'final', 'epoch=0-step=60.ckpt'))).toBe(refSha);
}

const missing = await torchMissing();
if (missing)
  process.stdout.write(
    `run.files.test.ts: PyTorch twin skipped: ${missing} (Debian: apt-get install -y python3-torch, or set PYTHON)\n`,
  );

describe('[slow] soup run with file checkpoints (Lightning layout)', { timeout: 400_000 }, () => {
  it(
    'Node twin: session 1 pushes epoch=0-step=N.ckpt, session 2 resumes from the file on an empty ' +
      'disk, final bit-identical',
    async () => {
      const cwd = useTempDir('soup-run-files-');
      const argv = [
        process.execPath,
        NODE_TRAINER,
        '--output_dir',
        '{output_dir}',
        '--max_steps',
        '{max_steps}',
        '--save_steps',
        '10',
        '--checkpoint_format',
        'file',
        '--resume_from_checkpoint',
        '{resume_from}',
      ];
      await twoSessions({ argv, cwd, env: soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '80' }), modelSha: nodeModelSha });
    },
  );

  it.skipIf(missing !== null)(
    'PyTorch twin: torch.save .ckpt files, two sessions, final weights bit-identical',
    async () => {
      const cwd = useTempDir('soup-run-files-torch-');
      const argv = [
        PYTHON,
        TORCH_TRAINER,
        '--output_dir',
        '{output_dir}',
        '--per_device_train_batch_size',
        '8',
        '--max_steps',
        '{max_steps}',
        '--save_steps',
        '10',
        '--checkpoint_format',
        'file',
        '--resume_from_checkpoint',
        '{resume_from}',
      ];
      const env = {
        ...soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '150' }),
        OPENBLAS_CORETYPE: undefined,
        OPENBLAS_L2_SIZE: undefined,
      };
      const modelSha = async (file: string): Promise<string> => {
        const code =
          'import sys, hashlib, torch\ns = torch.load(sys.argv[1])["model"]\nh = hashlib.sha256()\nfor k in ' +
          'sorted(s): h.update(k.encode()); h.update(s[k].contiguous().numpy().tobytes())\nprint(h.hexdigest())';
        const r = await runProcess(PYTHON, ['-c', code, file], { timeoutMs: 120_000 });
        expect(r.code, r.stderr).toBe(0);
        return r.stdout.trim();
      };
      await twoSessions({ argv, cwd, env, modelSha });
    },
  );
});
