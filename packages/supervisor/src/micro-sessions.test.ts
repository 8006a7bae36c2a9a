import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { previousMicroBatch, readMicroSessions } from './micro-sessions';
import { resolveStopSignal } from './session-end';

describe('readMicroSessions', () => {
  it("reads a checkpoint's sessions, skipping malformed ones; none when missing or unreadable", () => {
    const dir = useTempDir();
    expect(readMicroSessions(dir)).toEqual([]);
    const s = { start_step: 1, micro_batch_size: 4, grad_accum: 2, source: 'probe', oom_step_downs: [] };
    writeFileSync(join(dir, 'soup_run.json'), JSON.stringify({ sessions: [s, { micro_batch_size: 'x' }, null] }));
    expect(readMicroSessions(dir)).toEqual([s]);
    expect(previousMicroBatch(readMicroSessions(dir))).toEqual({ microBatchSize: 4, gradAccum: 2 });
    expect(previousMicroBatch([])).toBeNull();
    writeFileSync(join(dir, 'soup_run.json'), '{');
    expect(readMicroSessions(dir)).toEqual([]);
  });
});

describe('resolveStopSignal', () => {
  it('takes a stop signal in any case and refuses others, naming the choices', () => {
    expect(resolveStopSignal('sigint')).toBe('SIGINT');
    expect(() => resolveStopSignal('SIGKILL')).toThrow(
      '--stop-signal SIGKILL: expected one of SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT',
    );
  });
});
