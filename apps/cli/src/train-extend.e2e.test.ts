// soup train continued past its horizon with --extend-to, through the real bin: a run complete at 8 steps and a run
// stopped at step 4 are each continued to 12. Both end bit-identical to one uninterrupted run of 12 steps on the
// 8-step schedule (training.schedule_steps: 8), under the same run id; soup_run.json records the change. Raising
// training.steps alone is a new run (another schedule), refused on the old run's store with the way to continue it.
import { startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { soupWithHub, storeTestConfig } from '../test/store-helpers';

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
});

const eight = (extra = ''): string => storeTestConfig(extra).replace('steps: 12', 'steps: 8');
const common = ['train', '-c', 'soup.yaml', '--output-dir', 'out', '--repo', 'file://store', '--push-every-steps', '4'];
const finalSha = (cwd: string): string =>
  createHash('sha256')
    .update(readFileSync(join(cwd, 'store', 'final', 'model.safetensors')))
    .digest('hex');
const runOf = (stdout: string): string => /^soup: run (soup-[0-9a-f]+):/m.exec(stdout)?.[1] ?? 'none';

describe('[slow] soup train --extend-to', { timeout: 300_000 }, () => {
  it('complete at 8 or stopped at 4, continued to 12: bit-identical to 12 steps on the 8-step schedule', async () => {
    // The reference: 12 steps on the 8-step schedule, uninterrupted.
    const ref = useTempDir();
    writeFileSync(join(ref, 'soup.yaml'), storeTestConfig().replace('  lr: 0.01', '  lr: 0.01\n  schedule_steps: 8'));
    const r = await soupWithHub(server, common, ref);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/learning rate follows the schedule of 8 steps, then stays at its minimum to step 12/);

    // Complete at 8, then continued to 12.
    const done = useTempDir();
    writeFileSync(join(done, 'soup.yaml'), eight());
    const a1 = await soupWithHub(server, common, done);
    expect(a1.code, a1.stderr).toBe(0);
    expect(runOf(a1.stdout)).toBe(runOf(r.stdout));
    const a2 = await soupWithHub(server, [...common, '--extend-to', '12'], done);
    expect(a2.code, a2.stderr).toBe(0);
    expect(a2.stdout).toMatch(/was complete at step 8 .*its horizon is now 12: continuing from ckpt\/checkpoint-8/);
    expect(a2.stdout).toMatch(/extended: horizon 8 → 12 from step 8/);
    expect(runOf(a2.stdout)).toBe(runOf(r.stdout));
    const record = JSON.parse(readFileSync(join(done, 'store', 'soup_run.json'), 'utf8'));
    expect(record.horizons).toEqual([{ from: 8, to: 12, at_step: 8, at: expect.any(String) }]);
    expect(finalSha(done)).toBe(finalSha(ref));

    // Stopped at 4, then continued to 12.
    const mid = useTempDir();
    writeFileSync(join(mid, 'soup.yaml'), eight());
    const b1 = await soupWithHub(server, [...common, '--stop-after-steps', '4'], mid);
    expect(b1.code, b1.stderr).toBe(EXIT_CODES.segmentSaved);
    const b2 = await soupWithHub(server, [...common, '--extend-to', '12'], mid);
    expect(b2.code, b2.stderr).toBe(0);
    expect(b2.stdout).toMatch(/extended: horizon 8 → 12 from step 4/);
    expect(finalSha(mid)).toBe(finalSha(ref));

    // training.steps raised alone: another schedule, so another run; the old run's store names the way.
    writeFileSync(join(done, 'soup.yaml'), storeTestConfig());
    const c = await soupWithHub(server, common, done);
    expect(c.code, c.stdout + c.stderr).toBe(EXIT_CODES.resume);
    expect(c.stderr).toMatch(/--extend-to/);
  });
});
