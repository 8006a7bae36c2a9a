import { describe, expect, it } from 'vitest';
import { manifestSchema, pointerSchema } from './json-schemas';
import { validateManifest } from './validate-manifest';

const file = { size: 3, sha256: 'b'.repeat(64) };

describe('validateManifest', () => {
  it('accepts a manifest with nested names', () => {
    expect(
      validateManifest({ step: 1, run: 'r', files: { 'model.safetensors': file, 'sub/dir/x.json': file } }),
    ).toEqual({ errors: [], warnings: [] });
  });

  it('flags unsafe names, manifest.json itself, bad entries and an empty file list', () => {
    const errs = (files: Record<string, unknown>): string =>
      validateManifest({ step: 1, run: 'r', files }).errors.join('\n');
    expect(errs({ '../x': file })).toContain('contains ".."');
    expect(errs({ '/abs': file })).toContain('absolute path');
    expect(errs({ 'a\\b': file })).toContain('backslash');
    expect(errs({ 'a//b': file })).toContain('empty or "." segment');
    expect(errs({ 'manifest.json': file })).toContain('must not list manifest.json');
    expect(errs({ x: { size: -1, sha256: 'b'.repeat(64) } })).toContain('manifest.files.x.size');
    expect(errs({ x: { size: 1, sha256: 'B'.repeat(64) } })).toContain('manifest.files.x.sha256');
    expect(errs({})).toContain('manifest.files');
  });

  it('ships the schemas it validates with', () => {
    expect(manifestSchema.$id).toBe('https://soup.dev/schemas/hub-ckpt/manifest.schema.json');
    expect(pointerSchema.required).toEqual([
      'step',
      'path_in_repo',
      'run',
      'terminal',
      'manifest_sha256',
      'updated_at',
    ]);
  });
});
