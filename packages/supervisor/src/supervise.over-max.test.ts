// supervise() with --max-memory and `overMax: 'step-down'`: a real trainer whose memory grows every
// step (m × 4 MiB more a step, touched) passes the limit at step 4 with m = 16, a peak its one-step
// probe never saw; the session stops it at the first sample over the limit and steps m down to 8,
// resumed from the newest checkpoint, where all 6 steps stay under it. The memory is read from the
// trainer's own /proc status (VmRSS), as the CLI's tree reader does for one process.
import { useTempDir } from '@soup/test-utils';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent } from './supervise';
import { quickSession } from './_test-session';

// argv: out m resume_from. 6 steps of 250 ms; a checkpoint each step; m × 4 MiB more held each step.
const TRAINER = `
const fs = require('node:fs'), path = require('node:path');
const st = (v) => {
  const h = Buffer.from('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}');
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([n, h, Buffer.from([v])]);
};
const [out, m, resume] = [process.argv[1], Number(process.argv[2]), process.argv[3] || ''];
let step = resume ? JSON.parse(fs.readFileSync(path.join(resume, 'trainer_state.json'), 'utf8')).global_step : 0;
const held = [];
const cell = new Int32Array(new SharedArrayBuffer(4));
while (step < 6) {
  step += 1;
  held.push(Buffer.alloc(m * 4 * 2 ** 20, 1));
  Atomics.wait(cell, 0, 0, 250);
  console.log('step ' + step);
  const d = path.join(out, 'checkpoint-' + step);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'model.safetensors'), st(step));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: step, max_steps: 6, m }));
}
fs.writeFileSync(path.join(out, 'model.safetensors'), st(9));
`;

const rssOf = async (pid: number): Promise<{ bytes: number } | null> => {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : { bytes: Number(kb) * 1024 };
  } catch {
    return null;
  }
};

describe('[slow] supervise(): over --max-memory mid-run', { timeout: 60_000 }, () => {
  it('steps 16 down to 8 at the first sample over the limit, resumed from the newest checkpoint', async () => {
    const cwd = useTempDir('soup-supervise-overmax-');
    const bare = process.memoryUsage().rss; // this process is larger than a bare node: a safe upper bound
    const events: SuperviseEvent[] = [];
    const r = await supervise({
      ...quickSession(
        cwd,
        [process.execPath, '-e', TRAINER, '{output_dir}', '{micro_batch_size}', '{resume_from}'],
        events,
      ),
      settleMs: 200,
      globalBatchSize: 16,
      resolveMicroBatchSize: async () => ({ microBatchSize: 16, source: 'test' }),
      nextMicroBatchSize: (m) => (m > 1 ? m / 2 : null),
      // m = 16 holds 64 MiB a step: 192 at step 3, 256 at step 4; m = 8 holds at most 192 (step 6).
      memory: { read: rssOf, method: 'rss', pollMs: 50, maxMemoryBytes: bare + 224 * 2 ** 20, overMax: 'step-down' },
    });
    expect(r).toMatchObject({ outcome: 'complete', microBatchSize: 8, gradAccum: 2 });
    expect(r.oomStepDowns.map((s) => [s.from, s.to])).toEqual([[16, 8]]);
    expect(r.oomStepDowns[0]!.step).toBeGreaterThanOrEqual(3);
    expect(r.oomStepDowns[0]!.error).toMatch(/^its memory passed --max-memory [\d.]+ MiB at step [34]: /);
    expect(events.map((e) => e.line).join('\n')).toMatch(
      /out of memory at step [34] with micro 16 × 1 = 16 \(its memory passed/,
    );
  });
});
