import { runNode, spawnUntil, useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sweepProbeTempDirs } from './_probe-temp-dir';

const MODULE = fileURLToPath(new URL('./_probe-temp-dir.ts', import.meta.url));
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

const END = {
  exit: 'process.exit(0);',
  SIGKILL: "process.kill(process.pid, 'SIGKILL');",
  live: 'setInterval(() => {}, 1000);',
};

/** A child's script that makes a probe dir under `root`, writes a model into it, prints the dir and ends as told. */
function script(root: string, end: keyof typeof END): string {
  const file = join(root, `child-${end}.mts`);
  writeFileSync(
    file,
    `import { writeFileSync } from 'node:fs';\nimport { probeTempDir } from ${JSON.stringify(MODULE)};\n` +
      `const dir = probeTempDir(${JSON.stringify(root)});\nwriteFileSync(dir + '/train-step.onnx', 'model');\n` +
      `console.log(dir);\n${END[end]}\n`,
  );
  return file;
}

async function childDir(root: string, end: 'SIGKILL' | 'exit'): Promise<string> {
  const r = await runNode(['--import', 'tsx', script(root, end)], { cwd: PACKAGE, timeoutMs: 20_000 });
  expect(r.signal ?? r.code, r.stderr).toBe(end === 'SIGKILL' ? 'SIGKILL' : 0);
  return r.stdout.trim();
}

describe('probe temp dirs', () => {
  it('an exited process leaves no dir; a SIGKILLed one leaves it to the next probe, which removes it', async () => {
    const root = useTempDir();
    const exited = await childDir(root, 'exit');
    expect(existsSync(exited)).toBe(false);

    const killed = await childDir(root, 'SIGKILL');
    expect(existsSync(join(killed, 'train-step.onnx'))).toBe(true); // no exit handler ran

    // Not removed: a live owner's, another pid namespace's, and a dir named without its owner.
    const owner = await spawnUntil(process.execPath, ['--import', 'tsx', script(root, 'live')], /soup-probe-/, {
      cwd: PACKAGE,
      timeoutMs: 20_000,
    });
    const live = owner.output.trim();
    const otherNs = join(root, 'soup-probe-1-1-1-abcdef');
    const unnamed = join(root, 'soup-probe-XYZ123');
    for (const d of [otherNs, unnamed]) mkdirSync(d);

    // The live owner's first probeTempDir swept `root` already; the sweep again, as the next process runs it.
    expect(existsSync(killed)).toBe(false);
    expect(sweepProbeTempDirs(root)).toEqual([]);
    expect(existsSync(join(live, 'train-step.onnx'))).toBe(true);
    owner.child.kill('SIGKILL');
    await owner.exited;
    expect(sweepProbeTempDirs(root)).toEqual([live.slice(root.length + 1)]);
    for (const d of [otherNs, unnamed]) expect(existsSync(d), d).toBe(true);
    expect(readdirSync(root).filter((n) => n.startsWith('soup-probe-')).length).toBe(2);
  });
});
