import { expect, test } from 'vitest';
import { placeholder } from './index';
test('workspace wiring', () => {
  expect(placeholder).toBe(0);
});
