// onnxruntime-node's telemetry writes files on every process that creates a session: `mat-debug-<pid>.log` and a
// `.ses` file in the temp folder, `~/.cache/Microsoft/DeveloperTools/.onnxruntime/` under HOME. A training run starts
// a probe child per candidate, so a busy machine collects thousands. soup turns it off unless the user set
// ORT_DISABLE_TELEMETRY: a real step in a child process, with its own empty temp folder and HOME, leaves both empty.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const STEP = `
const { defineGptSpec, makeSyntheticBatch, TrainStep } = await import(process.argv[1]);
const spec = defineGptSpec({ vocabSize: 16, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1 });
const step = await TrainStep.create({ spec, seed: 0, intraOpNumThreads: 1 });
await step.run(makeSyntheticBatch({ spec, batchSize: 1, seed: 0 }), { lr: 1e-3 });
await step.release();
console.log('stepped');
`;

/** Every file under `dir`, relative. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath ?? d.path, d.name).slice(dir.length + 1));
}

function stepIn(env: Record<string, string>): { tmp: string[]; home: string[] } {
  const root = useTempDir('soup-ort-telemetry-');
  const tmp = join(root, 'tmp');
  const home = join(root, 'home');
  mkdirSync(tmp);
  mkdirSync(home);
  // Without CI: onnxruntime writes nothing where CI is set (as in this project's CI), and the child stands for a
  // user's machine, where it does.
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'ORT_DISABLE_TELEMETRY' && k !== 'CI'),
  );
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', STEP, entry], {
    env: { ...clean, TMPDIR: tmp, HOME: home, ...env } as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.stdout + r.stderr).toContain('stepped');
  return { tmp: filesUnder(tmp), home: filesUnder(home) };
}

describe('onnxruntime telemetry', () => {
  it('a step leaves nothing in the temp folder or HOME unless the user turned telemetry on', () => {
    expect(stepIn({})).toEqual({ tmp: [], home: [] });
    // The user's choice stands: ORT_DISABLE_TELEMETRY=0 keeps onnxruntime's own behaviour (its files appear).
    const on = stepIn({ ORT_DISABLE_TELEMETRY: '0' });
    expect([...on.tmp, ...on.home].length).toBeGreaterThan(0);
  });
});
