import { describe, expect, it } from 'vitest';
import { createProgress } from './create-progress';
import { fitFields } from './fit-fields';
import { formatDuration } from './format-duration';

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
    const p = createProgress({
      label: 'probe',
      total: 4,
      stream: a.stream,
      now: () => (t += 100),
      env: {},
      delayMs: 0,
    });
    p.update(1);
    p.update(2);
    p.log('batch 2 fits');
    p.done();
    const text = a.chunks.join('');
    expect(text).toContain('\r\x1b[K');
    expect(text).toContain('\x1b[32m');
    expect(text).toContain('batch 2 fits\n');
    const b = sink(true);
    const q = createProgress({
      label: 'probe',
      total: 4,
      stream: b.stream,
      now: () => (t += 100),
      env: { NO_COLOR: '1' },
      delayMs: 0,
    });
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

  it('fits a TTY line to the terminal width by dropping whole fields, never cutting a number', () => {
    const chunks: string[] = [];
    const stream = { write: (s: string) => void chunks.push(s), isTTY: true, columns: 40 };
    const p = createProgress({ label: 'train', total: 10, stream, env: {}, delayMs: 0, now: () => 1000 });
    p.update(5, 'a very long status that cannot fit in forty columns at all');
    const drawn = chunks.join('').split('\r\x1b[K').pop()!;
    expect(drawn.replace(/\x1b\[[0-9;]*m/g, '').length).toBeLessThanOrEqual(39);
    expect(drawn.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/ 50% {2}5\/10 {2}0\.0s$/);
  });

  it('at every width from 20 to 120 columns, every value drawn is whole (property)', () => {
    const tokens = (s: string): string[] =>
      s
        .replace(/\x1b\[[0-9;]*m/g, '')
        .split(/\s+/)
        .filter(Boolean);
    const render = (cols: number): string => {
      const chunks: string[] = [];
      const stream = { write: (s: string) => void chunks.push(s), isTTY: true, columns: cols };
      let t = 0;
      const p = createProgress({
        label: 'train',
        total: 12345,
        start: 6789,
        unit: 'step',
        stream,
        env: {},
        delayMs: 0,
        now: () => t,
      });
      t = 2_000_000;
      p.update(9876, 'loss 2.345678  lr 3.0e-4  push checkpoint-9876: verifying');
      return chunks
        .join('')
        .split('\r\x1b[K')
        .pop()!
        .replace(/\x1b\[[0-9;]*m/g, '');
    };
    const full = new Set(tokens(render(1000)));
    expect([...full]).toEqual(expect.arrayContaining(['9876/12345', '2.345678', '3.0e-4']));
    for (let cols = 20; cols <= 120; cols++) {
      const visible = render(cols);
      expect(visible.length, `cols ${cols}`).toBeLessThanOrEqual(cols - 1);
      for (const tok of tokens(visible).filter((x) => /\d/.test(x)))
        expect(full.has(tok), `cols ${cols}: "${tok}" in "${visible}"`).toBe(true);
    }
    expect(fitFields(['train', '9876/12345', 'loss 2.345678'], 25)).toBe('train  9876/12345');
  });

  it('counts relative to the horizon on a resumed session (90/120, never 90/30)', () => {
    const { chunks, stream } = sink(false);
    let t = 0;
    const p = createProgress({
      label: 'train',
      total: 120,
      start: 90,
      end: 120,
      unit: 'step',
      stream,
      now: () => t,
      env: {},
      delayMs: 0,
    });
    for (let step = 91; step <= 120; step++) {
      t += 1000;
      p.update(step);
    }
    p.done();
    const lines = chunks.join('').trimEnd().split('\n');
    expect(lines).toEqual([
      'train: 96/120 (80%)',
      'train: 108/120 (90%)',
      'train: 120/120 (100%)',
      'train: 120/120 steps in 30s',
    ]);
  });

  it('non-TTY: a line at every 10 % from the first, steady, and one at every mark (push)', () => {
    const { chunks, stream } = sink(false);
    let t = 0;
    const p = createProgress({ label: 'train', total: 30, unit: 'step', stream, now: () => t, env: {}, delayMs: 0 });
    for (let step = 1; step <= 30; step++) {
      t += 97; // a fast run: the first second covers 38 % of it
      p.update(step, `loss ${(3 - step / 30).toFixed(2)}`);
      if (step % 10 === 0) p.mark('pushed');
    }
    p.done();
    const lines = chunks.join('').trimEnd().split('\n');
    const pcts = lines.filter((l) => /\(\d+%\)/.test(l)).map((l) => Number(/\((\d+)%\)/.exec(l)![1]));
    expect(pcts[0]).toBe(10);
    expect(lines.filter((l) => l.endsWith('pushed') && l.includes('%'))).toEqual([
      'train: 10/30 (33%)  pushed',
      'train: 20/30 (66%)  pushed',
      'train: 30/30 (100%)  pushed',
    ]);
    // steady: consecutive progress lines are at most ~10 % apart
    for (let i = 1; i < pcts.length; i++) expect(pcts[i]! - pcts[i - 1]!).toBeLessThanOrEqual(10);
  });

  it('TERM=dumb: no ANSI codes and no redraws, even on a TTY', () => {
    const a = sink(true);
    let t = 0;
    const p = createProgress({
      label: 'train',
      total: 10,
      stream: a.stream,
      now: () => (t += 500),
      env: { TERM: 'dumb' },
      delayMs: 0,
    });
    for (let i = 1; i <= 10; i++) p.update(i, 'loss 1.00');
    p.log('pushed checkpoint-5');
    p.done();
    const text = a.chunks.join('');
    expect(text).not.toMatch(/\x1b/);
    expect(text).not.toContain('\r');
    expect(text).toContain('train: 10/10 (100%)  loss 1.00\n');
  });

  it('a TTY line never shows a stale status: a throttled update is drawn a moment later', async () => {
    const a = sink(true);
    const p = createProgress({ label: 'probe', stream: a.stream, now: () => 5000, env: {}, delayMs: 0 });
    p.update(0, 'trying batch 8');
    p.update(1, 'trying batch 16'); // same instant: throttled
    expect(a.chunks.join('').split('\r\x1b[K').pop()).toContain('trying batch 8');
    await new Promise((r) => setTimeout(r, 200));
    expect(a.chunks.join('').split('\r\x1b[K').pop()).toContain('trying batch 16');
    p.done();
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
