import { describe, expect, it } from 'vitest';
import { validatePointer } from './validate-pointer';

const good = {
  step: 120,
  path_in_repo: 'ckpt/checkpoint-120',
  run: 'fp',
  terminal: false,
  manifest_sha256: 'a'.repeat(64),
  updated_at: '2026-01-02T03:04:05.678Z',
};

describe('validatePointer', () => {
  it('accepts the ARCHITECTURE.md example and a terminal pointer', () => {
    expect(validatePointer(good)).toEqual({ errors: [], warnings: [] });
    expect(validatePointer({ ...good, path_in_repo: 'final', terminal: true }).errors).toEqual([]);
  });

  it('returns errors (never throws) naming the field', () => {
    expect(validatePointer({ ...good, step: -1 }).errors.join()).toContain('pointer.step');
    expect(validatePointer({ ...good, manifest_sha256: 'xyz' }).errors.join()).toContain('pointer.manifest_sha256');
    expect(validatePointer({ ...good, extra: 1 }).errors).toEqual(['pointer: unknown field "extra"']);
    const { updated_at: _u, ...missing } = good;
    expect(validatePointer(missing).errors).toEqual(['pointer: missing field "updated_at"']);
    expect(validatePointer({ ...good, path_in_repo: '../x' }).errors.join()).toContain('pointer.path_in_repo');
    expect(validatePointer({ ...good, terminal: true }).errors.join()).toContain('terminal is true but path_in_repo');
    expect(validatePointer({ ...good, step: 60 }).errors.join()).toContain('does not match step 60');
    expect(validatePointer(null).errors.length).toBeGreaterThan(0);
    expect(validatePointer('latest').errors.length).toBeGreaterThan(0);
  });
});
