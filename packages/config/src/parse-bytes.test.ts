import { describe, expect, it } from 'vitest';
import { formatBytes } from '@soup/batch-probe';
import { parseBytes } from './parse-bytes';

describe('parseBytes / formatBytes', () => {
  it('parses binary, decimal and bare units', () => {
    expect(parseBytes('6GiB')).toBe(6 * 2 ** 30);
    expect(parseBytes('6G')).toBe(6 * 2 ** 30);
    expect(parseBytes('1.5GB')).toBe(1.5e9);
    expect(parseBytes('512 MiB')).toBe(512 * 2 ** 20);
    expect(parseBytes('4096')).toBe(4096);
    expect(parseBytes(1234)).toBe(1234);
  });
  it('rejects what is not a size', () => {
    for (const bad of ['', 'GiB', '6 parsecs', '-1', '0', '1.5.2G']) expect(parseBytes(bad), bad).toBeUndefined();
    expect(parseBytes(0)).toBeUndefined();
    expect(parseBytes(1.5)).toBeUndefined();
  });
  it('formats with binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536 * 2 ** 20)).toBe('1.50 GiB');
    expect(formatBytes(null)).toBe('-');
  });
});
