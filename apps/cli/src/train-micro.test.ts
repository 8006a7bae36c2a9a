// --max-memory as soup train's flag gives it (its session line and the tuner's peak are @soup/supervisor's
// describeMicroBatch and describeTuningPeak, tested there).
import { resolveMaxMemory } from '@soup/supervisor';
import { describe, expect, it } from 'vitest';
import { parseBytes } from '@soup/config';

describe('--max-memory', () => {
  it('a size or a fraction of the budget; a fraction without a budget is unknown', () => {
    expect(resolveMaxMemory('6GiB', null, parseBytes)).toBe(6 * 2 ** 30);
    expect(resolveMaxMemory('0.9', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', null, parseBytes)).toBeNull();
    expect(resolveMaxMemory(undefined, 1000, parseBytes)).toBeNull();
  });
});
