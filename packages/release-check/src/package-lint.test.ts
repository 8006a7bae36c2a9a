import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { publicPackages, repoRoot } from './_workspace';
import { type Packed, packAll } from './_pack';
import { describeRun, run } from './_run';

// publint checks package.json against what gets published; attw (Are The Types Wrong) resolves the types of
// every entry point the way TypeScript would for a consumer. soup's packages are ESM-only, so attw runs with
// its `esm-only` profile (CommonJS `require` of an ESM-only package is not a supported use).
// Each package is packed once (`npm pack`, as publint and attw --pack would each do for themselves), and the
// three checks read that one tarball: publint and attw take a tarball path, and npm lists the files it packed.
const bin = (name: string): string => join(repoRoot, 'node_modules', '.bin', name);
const packages = publicPackages();
const work = mkdtempSync(join(tmpdir(), 'soup-lint-'));
const packed = new Map<string, Packed>();

beforeAll(async () => {
  for (const [name, p] of await packAll(packages, work)) packed.set(name, p);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each(packages.map((p) => [p.name, p] as const))('%s metadata', (name, pkg) => {
  test('publint reports no errors or warnings', async () => {
    const { tarball } = packed.get(name)!;
    const r = await run(bin('publint'), ['run', tarball, '--level', 'warning', '--strict'], { cwd: repoRoot });
    expect(r.code, describeRun('publint', r)).toBe(0);
  }, 120_000);

  test('attw reports no problems', async () => {
    const { tarball } = packed.get(name)!;
    const r = await run(
      bin('attw'),
      [tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-emoji', '--no-color'],
      { cwd: repoRoot },
    );
    expect(r.code, describeRun('attw', r)).toBe(0);
  }, 120_000);

  // npm puts a LICENSE at a package's root into its tarball whatever `files` says; the text must be the one the
  // `license` field names, or a user who vendors the tarball ships code without its terms.
  test('the tarball ships the license its package.json names', () => {
    expect(packed.get(name)?.files).toContain('LICENSE');
    const declared = (JSON.parse(readFileSync(join(pkg.dir, 'package.json'), 'utf8')) as { license?: string }).license;
    expect(declared).toBe('Apache-2.0');
    expect(readFileSync(join(pkg.dir, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0/);
  });
});
