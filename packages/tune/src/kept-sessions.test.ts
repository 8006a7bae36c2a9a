// Which warm step sessions soup train's tuner may hold at once (kept warm, or two side by side).
import { reachableMemory } from '@soup/cuda-probe';
import { describe, expect, it } from 'vitest';
import { holdable, holdBytesOf, KeptSessions, peakAtMost } from './kept-sessions';

const MiB = 2 ** 20;

describe('peakAtMost', () => {
  const trials = [
    { batch_size: 8, result: 'fit', peak_bytes: 134 * MiB },
    { batch_size: 16, result: 'fit', peak_bytes: 218 * MiB },
    { batch_size: 32, result: 'oom', peak_bytes: 400 * MiB },
  ];

  it('is the peak measured at m, else the smallest measured by a fit above it', () => {
    expect(peakAtMost(trials, 8)).toBe(134 * MiB);
    expect(peakAtMost(trials, 16)).toBe(218 * MiB);
    expect(peakAtMost(trials, 4)).toBe(134 * MiB); // 4 was not probed: at most what 8 took
  });

  it('is null without a fit at or above m (a trial that did not fit bounds nothing)', () => {
    expect(peakAtMost(trials, 32)).toBeNull();
    expect(peakAtMost([], 4)).toBeNull();
    expect(peakAtMost([{ batch_size: 8, result: 'fit', peak_bytes: null }], 4)).toBeNull();
  });
});

describe('holdable', () => {
  it('holds one session alone whatever its peak', () => {
    expect(holdable([500 * MiB], 300 * MiB)).toBe(true);
    expect(holdable([null], 300 * MiB)).toBe(true);
    expect(holdable([], 0)).toBe(true);
  });

  it('holds two or more only when their known peaks sum within the limit', () => {
    expect(holdable([134 * MiB, 122 * MiB], 300 * MiB)).toBe(true);
    expect(holdable([218 * MiB, 122 * MiB], 300 * MiB)).toBe(false);
    expect(holdable([150 * MiB, 150 * MiB], 300 * MiB)).toBe(true);
    expect(holdable([100 * MiB, null], 300 * MiB)).toBe(false); // an unknown peak is not assumed small
  });
});

describe('holdBytesOf', () => {
  it('is the budget on CUDA, and nothing beside one session without a budget', () => {
    expect(holdBytesOf('cuda', 14 * 2 ** 30)).toBe(14 * 2 ** 30);
    expect(holdBytesOf('cuda', null)).toBe(0);
    expect(holdable([MiB, MiB], holdBytesOf('cuda', null))).toBe(false);
  });

  it('is the host memory this process can reach on the CPU, not the budget', () => {
    const reach = holdBytesOf('cpu', 300 * MiB);
    expect(reach).toBeGreaterThan(300 * MiB); // the CPU sessions are host memory
    expect(Math.abs(reach - reachableMemory().bytes)).toBeLessThan(0.25 * reachableMemory().bytes);
  });
});

describe('KeptSessions', () => {
  /** A session that records its release (the bookkeeping is what is tested; real sessions: tune-train.test). */
  const session = (name: string, released: string[]) => ({ step: { release: async () => void released.push(name) } });

  it('makes room for a new session by releasing the largest peak first, and only as much as needed', async () => {
    const released: string[] = [];
    const k = new KeptSessions(400 * MiB);
    k.keep('off@16', session('off@16', released), 218 * MiB);
    k.keep('sel@8', session('sel@8', released), 122 * MiB);
    await k.makeRoom([134 * MiB]); // 218 + 122 + 134 > 400: release 218; 122 + 134 fit
    expect(released).toEqual(['off@16']);
    expect(k.keys()).toEqual(['sel@8']);
    await k.makeRoom([100 * MiB]);
    expect(released).toEqual(['off@16']);
  });

  it('releases a session of unknown peak before any other when room is needed', async () => {
    const released: string[] = [];
    const k = new KeptSessions(300 * MiB);
    k.keep('a', session('a', released), 100 * MiB);
    k.keep('b', session('b', released), null);
    await k.makeRoom([50 * MiB]);
    expect(released).toEqual(['b']);
  });

  it('never releases the sessions about to be used side by side, only the others', async () => {
    const released: string[] = [];
    const k = new KeptSessions(400 * MiB);
    k.keep('off@8', session('off@8', released), 134 * MiB);
    k.keep('sel@8', session('sel@8', released), 122 * MiB);
    k.keep('off@16', session('off@16', released), 218 * MiB);
    await k.makeRoom([122 * MiB, 218 * MiB], new Set(['sel@8', 'off@16']));
    expect(released).toEqual(['off@8']);
    expect(k.get('sel@8')).toBeDefined();
    expect(k.get('off@16')).toBeDefined();
  });

  it('keepOnly and releaseAll release every session they drop, once', async () => {
    const released: string[] = [];
    const k = new KeptSessions(Infinity);
    for (const n of ['a', 'b', 'c']) k.keep(n, session(n, released), MiB);
    await k.keepOnly(new Set(['b']));
    expect(released.sort()).toEqual(['a', 'c']);
    await k.releaseAll();
    expect(released.sort()).toEqual(['a', 'b', 'c']);
    expect(k.keys()).toEqual([]);
    await k.release('a'); // already gone: nothing released twice
    expect(released).toHaveLength(3);
  });
});
