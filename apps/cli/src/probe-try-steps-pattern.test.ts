// --steps-pattern / --steps-file (issue 47): a timing run shows its steps by the trainer's own count. The
// trainer (@soup/cuda-probe's stepping fixture) runs at most {cap} steps and evaluates for the rest, as long
// and as loud as a step, so its wall clock and its output grow as if it ran them all: only its step lines
// tell. The counting itself, and its torch twin, are tested in @soup/cuda-probe and @soup/plan.
import { runNode, useTempDir } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SOUP_BIN, soupEnv, soupRun } from '../test/run-helpers';

const TRAINER = fileURLToPath(
  new URL('../../../packages/cuda-probe/src/_fixtures/stepping-trainer.mjs', import.meta.url),
);
const command = `${process.execPath} ${TRAINER} {probe_steps} {cap} out 60 --bs {micro_batch_size}`;
// Runs of 1, 3 and 5 steps of 60 ms: 240 ms apart, clear of a loaded machine's start-up noise.
const tryFlags = ['--global-batch-size', '1', '--try', 'cap=3,99', '--time-steps', '2'];

function probe(cwd: string, args: string[]) {
  return runNode([SOUP_BIN, 'probe', '--exec', command, '--json', '--no-cache', ...args], {
    cwd,
    timeoutMs: 60_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' },
  });
}

describe('[slow] soup probe --try --steps-pattern: the trainer counts its own steps', { timeout: 60_000 }, () => {
  it('a configuration whose trainer counted fewer steps than asked is not timed and not chosen', async () => {
    const r = await probe(useTempDir(), [...tryFlags, '--steps-pattern', '^step (\\d+) ']);
    expect(r.code, r.stderr).toBe(0);
    const t = (JSON.parse(r.stdout) as { tune: { chosen: number; rows: { label: string; note: string | null }[] } })
      .tune;
    expect(t.rows.map((row) => [row.label, row.note])).toEqual([
      ['cap=3', 'not timed: the trainer counted 3 steps in a run of 5'],
      ['cap=99', null],
    ]);
    expect(t.rows[t.chosen]!.label).toBe('cap=99');
  });

  it('refuses a pattern without a step group, a path out of the working directory, either without --try', async () => {
    const cwd = useTempDir();
    const noGroup = await probe(cwd, [...tryFlags, '--steps-pattern', 'step \\d+']);
    expect(noGroup.code).toBe(2);
    expect(noGroup.stderr).toMatch(/--steps-pattern 'step \\d\+': it has no capture group: put the step number in/);
    const outside = await probe(cwd, [...tryFlags, '--steps-file', '../out']);
    expect(outside.code).toBe(2);
    expect(outside.stderr).toMatch(/--steps-file '\.\.\/out': give a path inside the working directory/);
    const run = await soupRun(cwd, ['--steps-pattern', 'step (\\d+)'], [process.execPath, TRAINER], soupEnv(cwd));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--steps-pattern applies to --try \(the timing runs of the tuner\)/);
  });
});
