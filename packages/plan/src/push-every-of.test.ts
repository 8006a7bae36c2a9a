import { describe, expect, it } from 'vitest';
import type { SoupConfig } from '@soup/config';
import { pushEveryOf } from './push-every-of';

const config = (steps: number, pushEverySteps: number | null): SoupConfig =>
  ({ training: { steps }, hub: { pushEverySteps } }) as unknown as SoupConfig;

describe('pushEveryOf', () => {
  it('the flag, else hub.push_every_steps, else a quarter of the horizon, at least 1', () => {
    expect(pushEveryOf(config(120, null))).toBe(30);
    expect(pushEveryOf(config(10, null))).toBe(2);
    expect(pushEveryOf(config(3, null))).toBe(1);
    expect(pushEveryOf(config(120, 7))).toBe(7);
    expect(pushEveryOf(config(120, 7), 5)).toBe(5);
  });
});
