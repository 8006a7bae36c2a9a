import { readFileSync } from 'node:fs';
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

  // npm puts a LICENSE at a package's root into its tarball whatever `files` says; the text must be the one the
  // `license` field names, or a user who vendors the tarball ships code without its terms.
  test('the tarball ships the license its package.json names', async () => {
    const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: pkg.dir });
    expect(r.code, describeRun('npm pack --dry-run', r)).toBe(0);
    const [packed] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
    expect(packed?.files.map((f) => f.path)).toContain('LICENSE');
    const declared = (JSON.parse(readFileSync(join(pkg.dir, 'package.json'), 'utf8')) as { license?: string }).license;
    expect(declared).toBe('Apache-2.0');
    expect(readFileSync(join(pkg.dir, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0/);
  }, 120_000);
});
