import { describe, expect, it } from 'vitest';
import { createSignalJudge } from './signal-judge';

const verdicts = (sigs: NodeJS.Signals[]): string[] => {
  const j = createSignalJudge();
  return sigs.map((s) => j.judge(s));
};

describe('createSignalJudge', () => {
  it('a platform sequence of different kinds is one session end; a kind already received quits', () => {
    // systemd stopping a scope, then the same signal again.
    expect(verdicts(['SIGTERM', 'SIGHUP', 'SIGHUP'])).toEqual(['end', 'same-end', 'quit']);
    // SLURM: the early warning, then the time limit's SIGTERM.
    expect(verdicts(['SIGUSR1', 'SIGTERM', 'SIGUSR2', 'SIGUSR1'])).toEqual(['end', 'same-end', 'same-end', 'quit']);
    // Ctrl-C twice, Ctrl-C then `kill`, `kill` then Ctrl-C: a person insisting.
    expect(verdicts(['SIGINT', 'SIGINT'])).toEqual(['end', 'quit']);
    expect(verdicts(['SIGINT', 'SIGTERM'])).toEqual(['end', 'quit']);
    expect(verdicts(['SIGTERM', 'SIGINT'])).toEqual(['end', 'quit']);
    expect(verdicts(['SIGHUP', 'SIGINT', 'SIGTERM'])).toEqual(['end', 'same-end', 'quit']);
  });
});
