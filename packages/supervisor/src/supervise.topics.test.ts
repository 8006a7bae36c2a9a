// The sentences a caller may word itself carry a topic (soup train drops them by topic and says its own):
// the run line, the batch lines, the closing sentence, and the warning of an exit 0 before the horizon.
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent } from './supervise';
import type { SuperviseOptions } from './supervise-options';
import { quickSession } from './_test-session';
import { oneCheckpointTrainer } from './_test-trainer-js';

function options(cwd: string, maxSteps: number, events: SuperviseEvent[]): SuperviseOptions {
  const argv = [process.execPath, '-e', oneCheckpointTrainer(maxSteps), '{output_dir}', '{micro_batch_size}'];
  return {
    ...quickSession(cwd, argv, events),
    globalBatchSize: 8,
    resolveMicroBatchSize: async () => ({ microBatchSize: 4, source: 'test' }),
  };
}

/** Each event with a topic, as `topic: the line's start`. */
const topics = (events: SuperviseEvent[]) =>
  events
    .filter((e) => e.topic !== undefined)
    .map((e) => `${e.topic}: ${e.line.replace(/^run soup-run-[0-9a-f]+/, 'run R')}`);

describe('[slow] supervise(): the topics of the sentences a caller may word itself', { timeout: 60_000 }, () => {
  it('the run, the micro-batch and the closing sentence of a complete run; and of a run already complete', async () => {
    const cwd = useTempDir('soup-supervise-topics-');
    const events: SuperviseEvent[] = [];
    expect(await supervise(options(cwd, 1, events))).toMatchObject({ outcome: 'complete', step: 1 });
    const said = topics(events);
    const starts = said.map((l) => l.split(' ').slice(0, 3).join(' '));
    expect(starts).toEqual(['batch: micro 4', 'run: run R:', 'outcome: run complete:']);
    expect(
      events
        .filter((e) => e.topic === undefined)
        .map((e) => e.line)
        .join('\n'),
    ).not.toMatch(/^run complete/m);

    const again: SuperviseEvent[] = [];
    await supervise(options(cwd, 1, again));
    expect(topics(again)).toEqual([expect.stringMatching(/^outcome: run R is complete: /)]);
  });

  it('an exit 0 before the horizon: the warning is an early exit, the segment sentence the outcome', async () => {
    const cwd = useTempDir('soup-supervise-topics-');
    const events: SuperviseEvent[] = [];
    expect(await supervise(options(cwd, 3, events))).toMatchObject({ outcome: 'segment-saved', step: 1 });
    const early = events.filter((e) => e.topic === 'early-exit');
    expect(early.map((e) => e.type)).toEqual(['warning']);
    expect(early[0]!.line).toMatch(/exited 0 at step 1, before its horizon of 3 steps/);
    expect(topics(events).at(-1)).toMatch(/^outcome: segment saved \(the trainer exited 0/);
  });

  it("a stop by design before the horizon: the segment saved for the caller's reason, no warning", async () => {
    const cwd = useTempDir('soup-supervise-topics-');
    const events: SuperviseEvent[] = [];
    const o = { ...options(cwd, 3, events), stopBeforeHorizon: '--stop-after-steps' };
    expect(await supervise(o)).toMatchObject({ outcome: 'segment-saved', step: 1, stopReason: '--stop-after-steps' });
    expect(events.filter((e) => e.level === 'warn').map((e) => e.line)).toEqual([]);
    expect(topics(events).at(-1)).toMatch(/^outcome: segment saved \(--stop-after-steps\): step 1 is saved in /);
  });
});
