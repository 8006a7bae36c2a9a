import { describe, expect, it } from 'vitest';
import { parseDevice } from './parse-device';

describe('parseDevice', () => {
  it('reads cpu, cuda and cuda:N', () => {
    expect(parseDevice('cpu')).toEqual({ kind: 'cpu', id: 0, spec: 'cpu' });
    expect(parseDevice('cuda')).toEqual({ kind: 'cuda', id: 0, spec: 'cuda' });
    expect(parseDevice('cuda:3')).toEqual({ kind: 'cuda', id: 3, spec: 'cuda:3' });
  });
  it('names no device for anything else', () => {
    for (const bad of ['', 'gpu', 'CUDA', 'cuda:', 'cuda:x', 'cpu:0', ' cpu']) expect(parseDevice(bad)).toBeUndefined();
  });
});
