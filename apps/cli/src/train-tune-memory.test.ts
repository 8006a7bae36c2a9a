// soup train with gradient_checkpointing: auto: the tuner times its steps in soup's own process,
// and that peak is reported apart from the session's, whose trainer is a process of its own. A
// memory verdict, not a timing one: it runs among the other files, not alone after them (the
// timing tests stay in train-tune.test.ts).
import { runNode, useTempDir } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOUP_BIN } from '../test/run-helpers';

describe("[slow] soup train: gradient_checkpointing auto, the tuner's peak", { timeout: 900_000 }, () => {
  it("soup train measures the tuner's timing sessions apart from the session's own peak", async () => {
    const cwd = useTempDir();
    const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
    expect((await runNode([SOUP_BIN, 'init', '--template', 'small'], { cwd, env, timeoutMs: 60_000 })).code).toBe(0);
    writeFileSync(
      join(cwd, 'soup.yaml'),
      readFileSync(join(cwd, 'soup.yaml'), 'utf8').replace(/^( {2}seed: .*)$/m, '$1\n  threads: 1'),
    );
    const r = await runNode([SOUP_BIN, 'train', '--budget', '300MiB', '--stop-after-steps', '2', '--no-cache'], {
      cwd,
      env,
      timeoutMs: 600_000,
    });
    expect(r.code, r.stderr).toBe(75); // a segment: stopped after 2 steps
    const out = r.stdout + r.stderr;
    expect(out).toMatch(/gradient_checkpointing: auto, measured/);
    const run = JSON.parse(/^RUN_JSON (.*)$/m.exec(r.stdout)![1]!) as {
      memory: {
        peak_bytes: number;
        peak_at: string;
        tuning?: { peak_bytes: number; in_session_peak: boolean; resident_at_reset_bytes: number | null };
      };
    };
    // The tuner held up to three step sessions at once in soup's own process (777–803 MiB on this
    // template); that is its own figure. The session's peak is the trainer child's tree, a process of its
    // own that never held the tuner's sessions, so it does not include it (405–432 MiB with the choice
    // fixed and no tuner, in process).
    expect(run.memory.tuning).toEqual({
      peak_bytes: expect.any(Number),
      in_session_peak: false,
      resident_at_reset_bytes: null,
    });
    expect(run.memory.peak_bytes).toBeLessThan(run.memory.tuning!.peak_bytes);
    expect(describePeakLine(out)).toMatch(
      /; before it, the tuner's timing sessions took soup's own process to [\d.]+ MiB \(measured apart: the trainer is a process of its own\)$/,
    );
  });
});

const describePeakLine = (out: string): string =>
  /^soup: memory: session peak .*$/m.exec(out)?.[0] ?? '(no memory line)';
