// soup's lines and a trainer's share a terminal: every line soup writes starts with `soup: `, the trainer's own
// lines pass through as they are (issue 43). Through the real bin: `soup run` over the example Node trainer (its
// lines on stdout and stderr), a `soup probe --exec` with its trials and progress, `soup cache ls`, a usage error.
import { runNode, useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE_TRAINER, nodeTrainerArgv, SOUP_BIN, soupEnv, soupRun } from '../test/run-helpers';

// The example trainer's own lines, and the one line a wrapper adds on its stderr.
const TRAINER_LINE = /^(trainer: .+|step \d+ loss \S+ ms \S+|wrapper: hello on stderr)$/;

/** soup's lines that go on with a capitalised word (`soup: Out of memory…`): soup writes lower case after its mark. */
const capitalised = (out: string): string[] => out.split('\n').filter((l) => /^soup: (warning: )?[A-Z][a-z]/.test(l));

/** The lines of `out` that are neither soup's nor `allowed`. */
function strangers(out: string, allowed: RegExp | null): string[] {
  return out
    .split('\n')
    .slice(0, -1)
    .filter((l) => !l.startsWith('soup: ') && !(allowed?.test(l) ?? false));
}

describe('[slow] soup: before every line soup writes', { timeout: 60_000 }, () => {
  it("soup run: soup's lines carry the prefix, the trainer's lines pass through unchanged", async () => {
    const cwd = useTempDir('soup-lines-');
    const wrapper = join(cwd, 'wrap.mjs');
    writeFileSync(
      wrapper,
      "process.stderr.write('wrapper: hello on stderr\\n');\n" +
        `await import(${JSON.stringify(pathToFileURL(NODE_TRAINER).href)});\n`,
    );
    const argv = [process.execPath, wrapper, ...nodeTrainerArgv({ maxSteps: 4, saveSteps: 2 }).slice(2)];
    // --hub-repo: a deprecated spelling, so soup warns.
    const options = ['--hub-repo', 'file://store', '--output-dir', 'out', '--batch-size', '2', '--settle', '200ms'];
    const r = await soupRun(cwd, [...options, '--poll', '100ms'], argv, soupEnv(cwd));
    expect(r.code, r.stderr).toBe(0);
    // The trainer's lines, unchanged.
    expect(r.stdout).toMatch(/^trainer: done at step 4$/m);
    expect(r.stdout).toMatch(/^step 4 loss \S+ ms \S+$/m);
    expect(r.stderr).toMatch(/^wrapper: hello on stderr$/m);
    // soup's lines, each with the prefix: a warning, the launch, the session's end.
    expect(r.stderr).toMatch(/^soup: warning: --hub-repo is deprecated/m);
    expect(r.stdout).toMatch(/^soup: launched trainer \(pid \d+\): /m);
    expect(r.stdout).toMatch(/^soup: run complete: pushed final\//m);
    // RUN_JSON is the machine line, last on stdout; every other line is soup's or the trainer's.
    const out = r.stdout.trimEnd().split('\n');
    expect(out.at(-1)).toMatch(/^RUN_JSON \{/);
    expect(strangers(`${out.slice(0, -1).join('\n')}\n`, TRAINER_LINE)).toEqual([]);
    expect(strangers(r.stderr, TRAINER_LINE)).toEqual([]);
    expect(capitalised(r.stdout + r.stderr)).toEqual([]);
  });

  it('soup probe, soup cache ls and a usage error: every line is soup: …', async () => {
    const cwd = useTempDir('soup-lines-');
    // A "trainer" that holds batch_size × 16 MiB for a moment: long enough for a progress line.
    writeFileSync(
      join(cwd, 'alloc.mjs'),
      'const b = Buffer.alloc(Number(process.argv[2]) * 16 * 2 ** 20, 1);\n' +
        'setTimeout(() => console.log(b.length), 700);\n',
    );
    const soup = (args: string[]) => runNode([SOUP_BIN, ...args], { cwd, env: soupEnv(cwd), timeoutMs: 30_000 });
    const cmd = `${process.execPath} alloc.mjs {batch_size}`;
    const probe = await soup(['probe', '--exec', cmd, '--budget', '400MiB', '--start', '2', '--ceiling', '4']);
    expect(probe.code, probe.stderr).toBe(0);
    expect(probe.stdout).toMatch(/^soup: batch size 4/m);
    expect(probe.stderr).toMatch(/^soup: .*batch +2 +fits/m);
    expect(probe.stderr).toMatch(/^soup: probe\b.*: \d+/m); // the progress renderer's line
    const ls = await soup(['cache', 'ls']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^soup: KEY +BATCH SIZE/m);
    expect(ls.stdout).toMatch(/^soup: [0-9a-f]{32} +4 /m);
    const bad = await soup(['cache', 'clear', '--key', 'nothex']);
    expect(bad.stderr).toMatch(/^soup: /);
    for (const out of [probe.stdout, probe.stderr, ls.stdout, ls.stderr, bad.stdout, bad.stderr]) {
      expect(strangers(out, null)).toEqual([]);
      expect(capitalised(out)).toEqual([]);
    }
  });
});
