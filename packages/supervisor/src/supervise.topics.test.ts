// The sentences a caller may word itself carry a topic (soup train drops them by topic and says its own):
// the run line, the batch lines, the closing sentence, and the warning of an exit 0 before the horizon.
import { DirStore } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent } from './supervise';
import type { SuperviseOptions } from './supervise-options';

/** Writes checkpoint-1 (its marker says `maxSteps`) and exits 0. */
const trainer = (maxSteps: number) => `
  const fs = require('node:fs'), path = require('node:path');
  const d = path.join(process.argv[1], 'checkpoint-1');
  fs.mkdirSync(d, { recursive: true });
  // final/ is judged by content: a safetensors header naming one 4-byte tensor, then its bytes.
  const h = Buffer.from('{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}'), n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  fs.writeFileSync(path.join(d, 'model.safetensors'), Buffer.concat([n, h, Buffer.alloc(4)]));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: 1, max_steps: ${maxSteps} }));`;

function options(cwd: string, maxSteps: number, events: SuperviseEvent[]): SuperviseOptions {
  return {
    argv: [process.execPath, '-e', trainer(maxSteps), '{output_dir}', '{micro_batch_size}'],
    store: new DirStore({ root: join(cwd, 'store') }),
    outputDir: join(cwd, 'out'),
    cwd,
    env: process.env,
    signal: new AbortController().signal,
    settleMs: 0,
    pollMs: 50,
    pushNice: 0,
    leaseTtlMs: null,
    globalBatchSize: 8,
    resolveMicroBatchSize: async () => ({ microBatchSize: 4, source: 'test' }),
    onEvent: (e) => events.push(e),
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
});
