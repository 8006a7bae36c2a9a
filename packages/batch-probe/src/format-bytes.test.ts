import { describe, expect, it } from 'vitest';
import { formatBytes, formatBytesApart } from './format-bytes';

const MiB = 1024 * 1024;

describe('formatBytesApart', () => {
  it('unequal amounts never read equal: a peak just over the budget shows by how much', () => {
    expect(formatBytes(300.4 * MiB)).toBe(formatBytes(300 * MiB));
    expect(formatBytesApart(300.4 * MiB, 300 * MiB)).toEqual(['300.4 MiB', '300.0 MiB']);
    expect(formatBytesApart(300 * MiB + 3 * 1024, 300 * MiB)).toEqual(['300.003 MiB', '300.000 MiB']);
    expect(formatBytesApart(300 * MiB + 1, 300 * MiB)).toEqual([`${300 * MiB + 1} B`, `${300 * MiB} B`]);
  });

  it('keeps the short form where it already tells them apart, and for equal amounts', () => {
    expect(formatBytesApart(212 * MiB, 300 * MiB)).toEqual(['212 MiB', '300 MiB']);
    expect(formatBytesApart(300 * MiB, 300 * MiB)).toEqual(['300 MiB', '300 MiB']);
    expect(formatBytesApart(1.5 * 1024 * MiB, 1.5 * 1024 * MiB + 2 * MiB)).toEqual(['1.500 GiB', '1.502 GiB']);
  });
});
