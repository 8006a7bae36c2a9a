import {
  copyFileSync,
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
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { publicPackages, repoRoot, shortName } from './_workspace';
import { npm, packAll } from './_pack';
import { describeRun, run } from './_run';
import { added, listTree, makeSandbox, mkdtempPrefixes, realTmpEntries, worktreeStatus } from './_sandbox';

// Every ```ts block of every public package's README is executed as written (through tsx) the way a user gets
// it: every public package is packed with `npm pack` and the tarballs installed together into one empty project
// in a temp folder, nothing linked from the workspace; each example is a file there. A README example that stops
// working fails here.
// It must also leave nothing behind: it runs with its own working directory, TMPDIR and HOME (all empty), and
// afterwards they are empty again, the real temp folder has no new entry named as the example's mkdtemp names
// one, and the repository's working tree has no new change. A user pastes these into their own project.

/** The ```ts blocks of a markdown text, in order. */
export function tsBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const re = /^```(?:ts|typescript)\s*\n([\s\S]*?)^```\s*$/gm;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) blocks.push(m[1]!);
  return blocks;
}

// tsx is the runner's tool, not a dependency the examples get: it is loaded from the repository.
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const cwdRoot = mkdtempSync(join(tmpdir(), 'soup-readme-'));
const consumer = join(cwdRoot, 'consumer');
afterAll(() => rmSync(cwdRoot, { recursive: true, force: true }), 120_000); // an installed project: see pack-install

beforeAll(async () => {
  const packages = publicPackages();
  mkdirSync(join(cwdRoot, 'tarballs'));
  const tarballs = await packAll(packages, join(cwdRoot, 'tarballs'));
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'package.json'),
    JSON.stringify({ name: 'readme-examples', private: true, type: 'module' }),
  );
  copyFileSync(join(repoRoot, '.npmrc'), join(consumer, '.npmrc'));
  const install = await run(
    npm,
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...[...tarballs.values()].map((p) => p.tarball),
    ],
    { cwd: consumer, timeoutMs: 280_000 },
  );
  expect(install.code, describeRun('npm install', install)).toBe(0);
  // Nothing but the tarballs may provide @soup packages: no workspace links.
  expect(readdirSync(join(consumer, 'node_modules', '@soup')).sort()).toEqual(
    packages.map((p) => shortName(p.name)).sort(),
  );
}, 300_000);

const cases = publicPackages().map((p) => {
  const readme = join(p.dir, 'README.md');
  return [p.name, existsSync(readme) ? tsBlocks(readFileSync(readme, 'utf8')) : []] as const;
});

test('every public package README has at least one runnable ts example', () => {
  expect(cases.filter(([, blocks]) => blocks.length === 0).map(([name]) => name)).toEqual([]);
});

describe.each(cases.filter(([, blocks]) => blocks.length > 0))('%s README', (name, blocks) => {
  test.each(blocks.map((code, i) => [i + 1, code] as const))(
    'example %i runs',
    async (i, code) => {
      const file = join(consumer, `${shortName(name)}-${i}.ts`);
      writeFileSync(file, code);
      const box = makeSandbox(mkdtempSync(join(cwdRoot, `${shortName(name)}-`)));
      const prefixes = mkdtempPrefixes(code);
      const [tmpBefore, repoBefore] = [realTmpEntries(prefixes), worktreeStatus(repoRoot)];
      const r = await run(process.execPath, ['--import', tsxLoader, file], {
        cwd: box.project,
        timeoutMs: 120_000,
        env: box.env,
      });
      expect(r.code, describeRun(`README example ${i} of ${name}`, r)).toBe(0);
      const left = {
        workingDirectory: listTree(box.project),
        tmpdir: listTree(box.tmp),
        home: listTree(box.home),
        realTmpdir: added(tmpBefore, realTmpEntries(prefixes)),
        repository: added(repoBefore, worktreeStatus(repoRoot)),
      };
      const nothing = { workingDirectory: [], tmpdir: [], home: [], realTmpdir: [], repository: [] };
      expect(left, `README example ${i} of ${name} left files behind`).toEqual(nothing);
    },
    150_000,
  );
});
