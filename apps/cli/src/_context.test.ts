// soupLines: `soup: ` at the start of every line, across writes, redraws and blank lines.
import { describe, expect, it } from 'vitest';
import { makeContext, soupLines } from './_context';

function sink(isTTY = false, columns?: number) {
  const chunks: string[] = [];
  return { chunks, stream: { write: (s: string) => void chunks.push(s), isTTY, ...(columns ? { columns } : {}) } };
}

describe('soupLines', () => {
  it('prefixes each line once, a line split over writes included; a blank line is `soup:`', () => {
    const out = sink();
    const s = soupLines(out.stream);
    s.write('one\ntwo');
    s.write(' halves\n\nthree\n');
    expect(out.chunks.join('')).toBe('soup: one\nsoup: two halves\nsoup:\nsoup: three\n');
  });

  it('a redrawn line gets it after the carriage return and its erase code; the width leaves room for it', () => {
    const out = sink(true, 80);
    const s = soupLines(out.stream);
    s.write('\r\x1b[Kprobe 1/4');
    s.write('\r\x1b[K');
    s.write('  batch 2 fits\n');
    expect(out.chunks.join('')).toBe('\r\x1b[Ksoup: probe 1/4\r\x1b[Ksoup:   batch 2 fits\n');
    expect(s.columns).toBe(74);
    expect(s.isTTY).toBe(true);
  });

  it("say, warn and progress carry it; the raw streams (the trainer's output, machine lines) do not", () => {
    const out = sink();
    const err = sink();
    const ctx = makeContext({ stdout: out.stream, stderr: err.stream, env: { NO_COLOR: '1' } }, false);
    ctx.say('a table\n  row 1');
    ctx.warn('careful');
    ctx.raw.stdout.write('trainer: step 1\n');
    const bar = ctx.progress({ label: 'train', total: 2, delayMs: 0 });
    bar.done();
    expect(out.chunks.join('')).toBe('soup: a table\nsoup:   row 1\ntrainer: step 1\n');
    expect(err.chunks.join('')).toMatch(/^soup: warning: careful\nsoup: train: 0\/2 it in [\d.]+s\n$/);
  });
});
