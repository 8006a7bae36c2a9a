// supervise() for a caller that knows its run (soup train): its run id, no run record at the store's root,
// and every complete checkpoint pushed oldest first (pushEach).
import { DirStore, type CheckpointStore, type StoreCommitParams } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent } from './supervise';
import { ONE_BYTE_SAFETENSORS_JS } from './_test-trainer-js';

// Writes checkpoint-1..4 (each with its marker and a one-byte safetensors model) as fast as it can, then exits 0
// at its horizon.
const trainer = `
  const fs = require('node:fs'), path = require('node:path');
${ONE_BYTE_SAFETENSORS_JS}
  for (let s = 1; s <= 4; s++) {
    const d = path.join(process.argv[1], 'checkpoint-' + s);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'model.safetensors'), st(s));
    fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: s, max_steps: 4 }));
    console.log('step ' + s);
  }`;

describe('[slow] supervise(): runId and pushEach', { timeout: 120_000 }, () => {
  it('runId names the run (no run record at the root); pushEach pushes each checkpoint, oldest first', async () => {
    const cwd = useTempDir('soup-supervise-run-id-');
    const root = join(cwd, 'store');
    const events: SuperviseEvent[] = [];
    const resolved: Array<{ resumeFrom: string | null; step: number | null }> = [];
    const r = await supervise({
      argv: [process.execPath, '-e', trainer, '{output_dir}', '{micro_batch_size}'],
      store: new DirStore({ root }),
      outputDir: join(cwd, 'out'),
      cwd,
      env: process.env,
      signal: new AbortController().signal,
      runId: 'caller-run-1',
      globalBatchSize: 8,
      resolveMicroBatchSize: async (at) => {
        resolved.push(at);
        return { microBatchSize: 4, source: 'config', previous: { microBatchSize: 8, gradAccum: 1 } };
      },
      settleMs: 0,
      pollMs: 1000, // all four appear between two polls: without pushEach only the newest would go
      pushEach: true,
      pushNice: 0,
      leaseTtlMs: null,
      onEvent: (e) => events.push(e),
    });
    expect(r).toMatchObject({ outcome: 'complete', run: 'caller-run-1', step: 4, evidence: 'horizon-reached' });
    expect(r.pushedSteps).toEqual([1, 2, 3, 4]);
    expect(resolved).toEqual([{ resumeFrom: null, step: null }]);
    expect(existsSync(join(root, 'soup_run.json'))).toBe(false);
    expect(JSON.parse(readFileSync(join(root, 'latest.json'), 'utf8'))).toMatchObject({
      run: 'caller-run-1',
      terminal: true,
    });
    const lines = events.map((e) => e.line).join('\n');
    expect(lines).toContain('micro 4 × 2 = 8 (was 8 × 1 last session) (config)');
    const exited = events.find((e) => e.type === 'trainer-exited');
    expect(exited).toMatchObject({ step: 4, exit: { code: 0, signal: null, stopping: false } });
    expect(events.filter((e) => e.type === 'pushing').map((e) => e.step)).toEqual([1, 2, 3, 4]);
  });

  it('pushEach: a push that fails once is tried again before newer steps go past it; no hole', async () => {
    const cwd = useTempDir('soup-supervise-push-each-retry-');
    const dir = new DirStore({ root: join(cwd, 'store') });
    let failed = 0;
    // The store refuses the first upload of checkpoint-2 (an outage of one request), and nothing else.
    const store: CheckpointStore = Object.assign(Object.create(dir) as CheckpointStore, {
      kind: dir.kind,
      description: dir.description,
      async commit(p: StoreCommitParams) {
        if (p.message.startsWith('soup: upload ckpt/checkpoint-2 ') && failed++ === 0)
          throw new Error('store unavailable (one request)');
        await dir.commit(p);
      },
    });
    const events: SuperviseEvent[] = [];
    const r = await supervise({
      argv: [process.execPath, '-e', trainer, '{output_dir}'],
      store,
      outputDir: join(cwd, 'out'),
      cwd,
      env: process.env,
      signal: new AbortController().signal,
      runId: 'caller-run-2',
      settleMs: 0,
      pollMs: 1000,
      pushEach: true,
      pushNice: 0,
      leaseTtlMs: null,
      onEvent: (e) => events.push(e),
    });
    const lines = events.map((e) => e.line).join('\n');
    expect(failed, lines).toBeGreaterThan(0);
    expect(r.pushedSteps, lines).toEqual([1, 2, 3, 4]);
    expect(r, lines).toMatchObject({ outcome: 'complete', step: 4 });
  });
});
