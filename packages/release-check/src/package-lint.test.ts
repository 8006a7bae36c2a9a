import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { publicPackages, repoRoot } from './_workspace';
import { describeRun, run } from './_run';

// publint checks package.json against what gets published; attw (Are The Types Wrong) resolves the types of
// every entry point the way TypeScript would for a consumer. soup's packages are ESM-only, so attw runs with
// its `esm-only` profile (CommonJS `require` of an ESM-only package is not a supported use).
const bin = (name: string): string => join(repoRoot, 'node_modules', '.bin', name);

describe.each(publicPackages().map((p) => [p.name, p] as const))('%s metadata', (_name, pkg) => {
  test('publint reports no errors or warnings', async () => {
    const r = await run(bin('publint'), ['run', pkg.dir, '--level', 'warning', '--strict'], { cwd: repoRoot });
    expect(r.code, describeRun('publint', r)).toBe(0);
  }, 120_000);

  test('attw reports no problems', async () => {
    const r = await run(
      bin('attw'),
      ['--pack', pkg.dir, '--profile', 'esm-only', '--format', 'ascii', '--no-emoji', '--no-color'],
      { cwd: repoRoot },
    );
    expect(r.code, describeRun('attw', r)).toBe(0);
  }, 120_000);
});
