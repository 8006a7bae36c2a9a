// The tune key of a trainer command: K (--time-steps) and the hashes of the trainer's files are in it,
// the command is stored as given in `trainer` (a token redacted by the caller), and where the files are
// unknown the tune cache is neither read nor written. A trainer with fixed costs stands in for the runs.
import { useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tuneExec, type TuneEvent } from './tune-exec';
import { resolveTuneCachePath } from './tune-cache';

const TOKEN = `hf_${'Zq7Xw3Kp9T'.repeat(4)}`;

function tuneOnce(
  cwd: string,
  o: { timeSteps: number; files?: Record<string, string>; unknown?: string | null },
  events: TuneEvent[] = [],
) {
  let runs = 0;
  return tuneExec({
    command: `trainer --bs {micro_batch_size} --x {x} --steps {probe_steps} --hf_token ${TOKEN}`,
    trainer: {
      command: 'trainer --bs {micro_batch_size} --x {x} --steps {probe_steps} --hf_token sha256:00',
      files: o.files ?? { 'train.py': 'aaaaaaaaaaaa' },
      unknown: o.unknown ?? null,
    },
    tries: { x: ['1'] },
    globalBatchSize: 4,
    timeSteps: o.timeSteps,
    budgetBytes: null,
    gpuName: 'cpu',
    gpuMemoryGb: 24,
    cache: { env: {}, homeDir: cwd, cwd },
    onEvent: (e) => events.push(e),
    fit: async () => ({ batchSize: 4, peakBytes: 1, source: 'probe', oneStepMs: null }),
    time: async (_cmd, steps) => {
      runs += 1;
      return { ms: 500 + steps * 100 + runs };
    },
  });
}

describe('tuneExec: the tune key', () => {
  it('holds K and the files; stores the command as given in `trainer`', async () => {
    const cwd = useTempDir();
    expect((await tuneOnce(cwd, { timeSteps: 2 })).source).toBe('measured');
    expect((await tuneOnce(cwd, { timeSteps: 2 })).source).toBe('cache');
    expect((await tuneOnce(cwd, { timeSteps: 3 })).source).toBe('measured');
    const edited = await tuneOnce(cwd, { timeSteps: 2, files: { 'train.py': 'bbbbbbbbbbbb' } });
    expect(edited.source).toBe('measured');
    expect(edited.entry.files).toEqual({ 'train.py': 'bbbbbbbbbbbb' });
    const text = readFileSync(resolveTuneCachePath({ env: {}, homeDir: cwd, cwd }), 'utf8');
    expect(text).not.toContain(TOKEN);
    expect(text).toContain('--hf_token sha256:00');
  });

  it('files unknown: measured every time, never written, and said so', async () => {
    const cwd = useTempDir();
    const events: TuneEvent[] = [];
    const r = await tuneOnce(cwd, { timeSteps: 2, unknown: 'over 2000 source files under /x' }, events);
    expect(r).toMatchObject({ source: 'measured', cachePath: null });
    expect(events.map((e) => e.message)).toContain('the tune cache is not used: over 2000 source files under /x');
    expect(existsSync(join(cwd, '.soup', 'tune_cache.json'))).toBe(false);
  });
});
