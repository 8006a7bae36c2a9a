// The trainer's own step count of a run: a declared pattern over its output lines, a trainer_state.json
// it wrote during the run; each refused in words when it cannot work, none followed out of cwd.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { checkStepsEvidence, startStepsCount } from './steps-seen';

const flags = { pattern: '--steps-pattern', file: '--steps-file' };
const state = (path: string, step: number): void => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, JSON.stringify({ global_step: step, max_steps: 17 }));
};

describe('checkStepsEvidence', () => {
  it('takes one group or a group named step, and a path inside the working directory', () => {
    expect(checkStepsEvidence({ pattern: 'step (\\d+)', file: 'out' }, flags)).toEqual([]);
    expect(checkStepsEvidence({ pattern: '(\\w+) (?<step>\\d+)/(\\d+)', file: 'out/./trainer_state.json' })).toEqual(
      [],
    );
  });

  it('refuses a pattern that does not compile or has no single step group, and a path out of cwd', () => {
    expect(checkStepsEvidence({ pattern: 'step (\\d+' }, flags)).toEqual([
      expect.stringMatching(/^--steps-pattern 'step \(\\d\+': not a regular expression \(Invalid regular/),
    ]);
    expect(checkStepsEvidence({ pattern: 'step \\d+' }, flags)).toEqual([
      "--steps-pattern 'step \\d+': it has no capture group: put the step number in one, e.g. 'step (\\d+)'",
    ]);
    expect(checkStepsEvidence({ pattern: '(\\d+)/(\\d+)' }, flags)).toEqual([
      "--steps-pattern '(\\d+)/(\\d+)': it has 2 capture groups: name the step's (?<step>\\d+), or make the " +
        'others (?:…)',
    ]);
    for (const file of ['../out', '/tmp/out', 'out/../../x', ''])
      expect(checkStepsEvidence({ file }, flags)).toEqual([
        `--steps-file '${file}': give a path inside the working directory (the trainer's output ` +
          'folder or its trainer_state.json, e.g. out/), never one out of it',
      ]);
  });
});

describe('startStepsCount', () => {
  it('counts the largest step a pattern captured, over split chunks, \\r, both streams and launcher prefixes', () => {
    const cwd = useTempDir();
    expect(startStepsCount({}, cwd)).toBeNull();
    const count = startStepsCount({ pattern: '^step (\\d+)' }, cwd)!;
    count.onOutput('stdout', 'loading\nst');
    count.onOutput('stdout', 'ep 3 loss 1.2\r');
    count.onOutput('stderr', '[rank0]: step 7 loss 1.0\n[default1]:step 8\n');
    count.onOutput('stdout', 'eval at step 99\n'); // not at a line start
    expect(count.finish()).toBe(8); // behind a launcher's prefix
    const last = startStepsCount({ pattern: '^step (\\d+)' }, cwd)!;
    last.onOutput('stdout', 'load\rstep 4\rstep 5'); // a progress bar's \r; the last line has no line end
    expect(last.finish()).toBe(5);
    const named = startStepsCount({ pattern: "(?<epoch>\\d+) '(?:global_)?step': (?<step>\\d+)" }, cwd)!;
    named.onOutput('stdout', "{'epoch': 1 'step': 4}\n{'epoch': 2 'global_step': 9}\n");
    expect(named.finish()).toBe(9);
    const none = startStepsCount({ pattern: 'step (\\d+)' }, cwd)!;
    none.onOutput('stdout', 'loss 1.0\n');
    expect(none.finish()).toBe(0); // declared and never shown: no step counted
  });

  it('reads global_step of a trainer_state.json written during the run; one left from before counts 0', () => {
    const cwd = useTempDir();
    state(join(cwd, 'out/checkpoint-17/trainer_state.json'), 17);
    state(join(cwd, 'run/trainer_state.json'), 17);
    const dir = startStepsCount({ file: 'out' }, cwd)!;
    expect(dir.finish()).toBe(0); // checkpoint-17 is an earlier run's
    const again = startStepsCount({ file: 'out' }, cwd)!;
    state(join(cwd, 'out/checkpoint-9/trainer_state.json'), 9);
    expect(again.finish()).toBe(9);
    const file = startStepsCount({ file: 'run/trainer_state.json' }, cwd)!;
    state(join(cwd, 'run/trainer_state.json'), 5); // rewritten in place
    expect(file.finish()).toBe(5);
  });

  it('never follows a link out of the working directory', () => {
    const cwd = useTempDir();
    const outside = useTempDir();
    mkdirSync(join(cwd, 'out'));
    const count = startStepsCount({ file: 'out' }, cwd)!;
    state(join(outside, 'trainer_state.json'), 40);
    symlinkSync(join(outside, 'trainer_state.json'), join(cwd, 'out/trainer_state.json'));
    expect(count.finish()).toBe(0);
  });
});
