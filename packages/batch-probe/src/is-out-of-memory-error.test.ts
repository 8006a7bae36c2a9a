import { expect, test } from 'vitest';
import { OutOfMemoryError } from './errors';
import { isOutOfMemoryError } from './is-out-of-memory-error';

test('recognises OutOfMemoryError and anything with code SOUP_OOM, nothing else', () => {
  const oom = new OutOfMemoryError('out of memory', {
    batchSize: 8,
    peakBytes: 10,
    budgetBytes: 5,
    cause: new Error('driver'),
  });
  expect(oom).toMatchObject({
    name: 'OutOfMemoryError',
    code: 'SOUP_OOM',
    batchSize: 8,
    peakBytes: 10,
    budgetBytes: 5,
  });
  expect((oom.cause as Error).message).toBe('driver');
  expect(isOutOfMemoryError(oom)).toBe(true);
  expect(isOutOfMemoryError({ code: 'SOUP_OOM' })).toBe(true);
  expect(isOutOfMemoryError(new Error('CUDA out of memory'))).toBe(false);
  expect(isOutOfMemoryError(null)).toBe(false);
  expect(isOutOfMemoryError('SOUP_OOM')).toBe(false);
});
