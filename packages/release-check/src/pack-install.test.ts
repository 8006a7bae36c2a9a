import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { publicPackages, repoRoot, shortName } from './_workspace';
import { npm, packAll } from './_pack';
import { describeRun, run } from './_run';

// Every public package is packed with `npm pack`, installed ALONE (plus the tarballs of its own @soup
// dependencies, nothing else from the workspace) into an empty project, then imported from ESM, used for real
// (smoke/<pkg>/use.mjs) and type-checked as a consumer against its shipped .d.ts (smoke/<pkg>/consumer.ts).

const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const smokeRoot = join(import.meta.dirname, '..', 'smoke');
const packages = publicPackages();
const work = mkdtempSync(join(tmpdir(), 'soup-pack-'));
const tarballs = new Map<string, string>();

beforeAll(async () => {
  const dest = join(work, 'tarballs');
  mkdirSync(dest);
  for (const [name, { tarball }] of await packAll(packages, dest)) tarballs.set(name, tarball);
}, 300_000);

// Thirteen installed projects: removing them took over the default 30 s hook timeout on a loaded machine.
afterAll(() => rmSync(work, { recursive: true, force: true }), 120_000);

test('every public package has a smoke script and a consumer type check', () => {
  const missing = packages
    .map((p) => shortName(p.name))
    .filter((s) => !existsSync(join(smokeRoot, s, 'use.mjs')) || !existsSync(join(smokeRoot, s, 'consumer.ts')));
  expect(missing).toEqual([]);
});

describe.each(packages.map((p) => [p.name, p] as const))('%s installed alone', (name, pkg) => {
  test('installs from its tarball, imports from ESM, runs a real use, type-checks a consumer', async () => {
    const short = shortName(name);
    const project = join(work, short);
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: `consumer-of-${short}`, private: true, type: 'module' }, null, 2),
    );
    copyFileSync(join(repoRoot, '.npmrc'), join(project, '.npmrc'));
    const ours = [name, ...pkg.closure].map((n) => tarballs.get(n)!);
    const install = await run(
      npm,
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...ours, '@types/node@20'],
      { cwd: project, timeoutMs: 280_000 },
    );
    expect(install.code, describeRun('npm install', install)).toBe(0);
    // Nothing but the tarballs may provide @soup packages: no workspace links.
    const installed = readdirSync(join(project, 'node_modules', '@soup')).sort();
    expect(installed).toEqual([name, ...pkg.closure].map(shortName).sort());

    cpSync(join(smokeRoot, short), project, { recursive: true });
    const use = await run(process.execPath, ['use.mjs'], { cwd: project, timeoutMs: 120_000 });
    expect(use.code, describeRun('use.mjs', use)).toBe(0);
    expect(use.stdout).toContain('SMOKE OK');

    // The shipped .d.ts and @types/node are checked; TypeScript's own lib files are not (skipDefaultLibCheck):
    // they are not ours, and checking them took 2.3 s of the 5.9 s of CPU a consumer's check cost.
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          skipDefaultLibCheck: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const types = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project });
    expect(types.code, describeRun('tsc on consumer.ts', types)).toBe(0);
  }, 300_000);
});

// @soup/cuda-probe's ORT probes need its optional peers: installed together from the tarballs (and
// onnxruntime-node from the registry), the train-step probe runs a real step in the shipped worker.
test('@soup/cuda-probe with its optional peers (onnxruntime-node, @soup/onnx-train) runs a train-step ' +
  'probe', async () => {
  const project = join(work, 'cuda-probe-with-peers');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer-of-cuda-probe-with-peers', private: true, type: 'module' }, null, 2),
  );
  copyFileSync(join(repoRoot, '.npmrc'), join(project, '.npmrc'));
  const byName = new Map(packages.map((p) => [p.name, p]));
  const names = new Set([
    '@soup/cuda-probe',
    '@soup/onnx-train',
    ...byName.get('@soup/cuda-probe')!.closure,
    ...byName.get('@soup/onnx-train')!.closure,
  ]);
  const ort = JSON.parse(readFileSync(join(repoRoot, 'packages', 'cuda-probe', 'package.json'), 'utf8'))
    .peerDependencies['onnxruntime-node'] as string;
  const install = await run(
    npm,
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...[...names].map((n) => tarballs.get(n)!),
      `onnxruntime-node@${ort}`,
    ],
    {
      cwd: project,
      timeoutMs: 280_000,
    },
  );
  expect(install.code, describeRun('npm install', install)).toBe(0);
  cpSync(join(smokeRoot, '..', 'smoke-peers', 'cuda-probe'), project, { recursive: true });
  const use = await run(process.execPath, ['use.mjs'], { cwd: project, timeoutMs: 120_000 });
  expect(use.code, describeRun('use.mjs', use)).toBe(0);
  expect(use.stdout).toContain('SMOKE OK');
}, 300_000);
