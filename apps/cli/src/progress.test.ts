import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from './progress';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { chunks, stream: { write: (s: string) => void chunks.push(s), isTTY, columns: 100 } };
}

describe('createProgress', () => {
  it('prints one line per 10 % when not a TTY, no escape codes', () => {
    const { chunks, stream } = sink(false);
    let t = 0;
    const p = createProgress({ label: 'train', total: 100, unit: 'step', stream, now: () => t, env: {}, delayMs: 0 });
    for (let i = 1; i <= 100; i++) {
      t += 10;
      p.update(i, `loss ${(5 - i / 50).toFixed(2)}`);
    }
    p.done();
    const text = chunks.join('');
    expect(text).not.toMatch(/\x1b/);
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(11); // 10 %, 20 %, ... 100 %, then the summary
    expect(lines[0]).toBe('train: 10/100 (10%)  loss 4.80');
    expect(lines[10]).toBe('train: 100/100 steps in 1.0s  loss 3.00');
  });

  it('redraws in place on a TTY, with colour unless NO_COLOR', () => {
    const a = sink(true);
    let t = 0;
    const p = createProgress({ label: 'probe', total: 4, stream: a.stream, now: () => (t += 100), env: {}, delayMs: 0 });
    p.update(1);
    p.update(2);
    p.log('batch 2 fits');
    p.done();
    const text = a.chunks.join('');
    expect(text).toContain('\r\x1b[K');
    expect(text).toContain('\x1b[32m');
    expect(text).toContain('batch 2 fits\n');
    const b = sink(true);
    const q = createProgress({ label: 'probe', total: 4, stream: b.stream, now: () => (t += 100), env: { NO_COLOR: '1' }, delayMs: 0 });
    q.update(3);
    q.done();
    expect(b.chunks.join('')).not.toMatch(/\x1b\[\d+m/);
    expect(b.chunks.join('')).toContain('█');
  });

  it('stays quiet for quick work: nothing before delayMs, no summary when asked', () => {
    const { chunks, stream } = sink(false);
    let t = 0;
    const p = createProgress({ label: 'push', total: 5, stream, now: () => t, summary: false });
    for (let i = 1; i <= 5; i++) {
      t += 100;
      p.update(i, 'uploading');
    }
    p.done();
    expect(chunks).toEqual([]);
    const q = createProgress({ label: 'push', total: 5, stream, now: () => t, summary: false });
    t += 1500;
    q.update(1, 'uploading');
    q.done();
    expect(chunks.join('')).toBe('push: 1/5 (20%)  uploading\npush: 1/5 it in 1.5s  uploading\n');
  });

  it('cuts a TTY line to the terminal width without breaking escape codes', () => {
    const chunks: string[] = [];
    const stream = { write: (s: string) => void chunks.push(s), isTTY: true, columns: 40 };
    const p = createProgress({ label: 'train', total: 10, stream, env: {}, delayMs: 0, now: () => 1000 });
    p.update(5, 'a very long status that cannot fit in forty columns at all');
    const drawn = chunks.join('').split('\r\x1b[K').pop()!;
    expect(drawn.replace(/\x1b\[[0-9;]*m/g, '')).toHaveLength(39);
    expect(drawn.endsWith('\x1b[0m')).toBe(true);
  });

  it('prints nothing when silent and nothing after fail', () => {
    const { chunks, stream } = sink(false);
    const p = createProgress({ label: 'x', total: 2, stream, silent: true });
    p.update(2);
    p.done();
    const q = createProgress({ label: 'y', total: 2, stream });
    q.fail();
    q.done();
    expect(chunks).toEqual([]);
  });

  it('formats durations', () => {
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(65_000)).toBe('1m05s');
    expect(formatDuration(3_720_000)).toBe('1h02m');
  });
});
