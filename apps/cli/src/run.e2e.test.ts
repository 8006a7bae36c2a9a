// `soup run` supervising a Node trainer built on @soup/onnx-train, run as an external command, through
// the real bin against the Hub-protocol test server: session 1 ends at --time-limit, the output folder
// is deleted, session 2 finishes, the final weights match an uninterrupted run's bit for bit, and a third
// run says "complete" and launches nothing.
import { startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { NODE_TRAINER, nodeTrainerArgv, referenceRun, soupEnv, soupRun } from '../test/run-helpers';

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
});

describe('[slow] soup run with a Node trainer (two sessions, Hub store)', { timeout: 300_000 }, () => {
  it(
    'ends session 1 at --time-limit, resumes on an empty disk, finishes bit-identical, then says ' + 'complete',
    async () => {
      const cwd = useTempDir('soup-run-e2e-');
      const argv = nodeTrainerArgv({ maxSteps: 120, saveSteps: 10 });
      const ref = await referenceRun(cwd, argv, 4);
      const env = soupEnv(cwd, { HF_TOKEN: server.token, HF_ENDPOINT: server.url, SOUP_EXAMPLE_STEP_DELAY_MS: '80' });
      const options = [
        '--repo',
        'me/node-run-ckpt',
        '--output-dir',
        'out',
        '--batch-size',
        '4',
        '--settle',
        '500ms',
        '--poll',
        '200ms',
      ];

      const s1 = await soupRun(cwd, [...options, '--time-limit', '5s'], argv, env);
      expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(s1.stdout).toMatch(/time limit 5\.0s reached: sending SIGTERM/);
      expect(s1.stdout).toMatch(/segment saved \(time limit 5\.0s\): step \d+ is saved/);
      const saved = Number(/step (\d+) is saved/.exec(s1.stdout)![1]);
      expect(saved).toBeGreaterThan(0);
      expect(saved).toBeLessThan(120);
      const files = server.files('me/node-run-ckpt')!;
      const pointer = JSON.parse((await readBlob(server, 'latest.json')).toString('utf8')) as Record<string, unknown>;
      // The trainer saved the step it was on when SIGTERM came, and that is what the pointer names.
      expect(pointer).toMatchObject({ step: saved, path_in_repo: `ckpt/checkpoint-${saved}`, terminal: false });
      expect(Object.keys(files)).toContain(`ckpt/checkpoint-${saved}/model.safetensors`);

      rmSync(`${cwd}/out`, { recursive: true, force: true }); // the next session starts on an empty disk
      const s2 = await soupRun(cwd, options, argv, env);
      expect(s2.code, s2.stderr).toBe(0);
      expect(s2.stdout).toContain(`pulled ckpt/checkpoint-${saved} (step ${saved}`);
      expect(s2.stdout).toContain(`trainer: resumed from ${cwd}/out/checkpoint-${saved} at step ${saved}`);
      expect(s2.stdout).toMatch(
        /run complete: pushed final\/ \(2 files from out, step 120, verified\) with a terminal pointer/,
      );
      const finalSha = createHash('sha256')
        .update(await readBlob(server, 'final/model.safetensors'))
        .digest('hex');
      expect(finalSha).toBe(ref);

      const s3 = await soupRun(cwd, [...options, '--json'], argv, env);
      expect(s3.code, s3.stderr).toBe(0);
      expect(JSON.parse(s3.stdout)).toMatchObject({
        ok: true,
        status: 'complete',
        exit_code: 0,
        final_step: 120,
        final_pushed: false,
        trainer: null,
      });
      expect(s3.stderr).toMatch(/is complete: .* final\/ holds step 120; nothing to launch/);
      expect(s3.stderr).not.toContain('launched trainer');
    },
  );
});

describe('[slow] soup run --batch-size auto', { timeout: 300_000 }, () => {
  it(
    "probes the trainer's one-step command, caches the size, and later sessions keep the size the run " +
      'started with',
    async () => {
      const cwd = useTempDir('soup-run-auto-');
      const argv = nodeTrainerArgv({ maxSteps: 200, saveSteps: 10 });
      const probe =
        `${process.execPath} ${NODE_TRAINER} --output_dir ${join(cwd, 'probe-out')} --max_steps 1 ` +
        `--save_steps 0 --per_device_train_batch_size {batch_size}`;
      const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '80' });
      const options = [
        '--repo',
        'file://store',
        '--output-dir',
        'out',
        '--batch-size',
        'auto',
        '--probe',
        probe,
        '--start',
        '2',
        '--ceiling',
        '4',
        '--budget',
        '4GiB',
        '--max-length',
        '32',
        '--settle',
        '500ms',
        '--poll',
        '200ms',
      ];
      // Limits long enough for the trainer to start and save on a loaded machine, short of its 200 steps (16 s of
      // delays).
      const s1 = await soupRun(cwd, [...options, '--time-limit', '8s'], argv, env);
      expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
      // --ceiling 4 fits: the answer is the ceiling, said as capped (a larger size was never tried).
      expect(s1.stdout).toMatch(
        /batch size 4 fits \(probed on cpu, \d+ trials?, .*; capped: 4 is the ceiling of the search/,
      );
      expect(s1.stdout).toContain('trainer: fresh start, batch 4, 200 steps');
      const cache = JSON.parse(readFileSync(join(cwd, 'batch_cache.json'), 'utf8')) as Record<string, number>;
      expect(Object.values(cache)).toEqual([4]);
      const record = JSON.parse(readFileSync(join(cwd, 'store', 'soup_run.json'), 'utf8')) as Record<string, unknown>;
      expect(record).toMatchObject({ format: 'soup-run/1', batch_size: 4, identity: { argv } });

      // Session 2 on a "smaller device": the cache is gone and the ceiling is 3, so resolving the size
      // again (cache or probe) could only answer 3. Keeping the run's own size answers 4.
      rmSync(join(cwd, 'batch_cache.json'));
      const smaller = options.map((o, i) => (options[i - 1] === '--ceiling' ? '3' : o));
      const s2 = await soupRun(cwd, [...smaller, '--time-limit', '5s'], argv, env);
      expect(s2.code, s2.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(s2.stdout).toContain("batch size 4 (chosen by this run's first session");
      expect(s2.stdout).not.toContain('probed on');
      expect(s2.stdout).toMatch(/trainer: resumed from .* batch 4, 200 steps/);
      expect(existsSync(join(cwd, 'batch_cache.json'))).toBe(false); // nothing probed, nothing cached
      expect(
        JSON.parse(
          s2.stdout
            .split('\n')
            .find((l) => l.startsWith('RUN_JSON '))!
            .slice(9),
        ),
      ).toMatchObject({ status: 'segment', batch_size: 4, batch_source: 'checkpoint', exit_code: 75 });
    },
  );
});

async function readBlob(s: HubServer, path: string): Promise<Buffer> {
  const res = await fetch(`${s.url}/me/node-run-ckpt/resolve/main/${path}`, {
    headers: { Authorization: `Bearer ${s.token}` },
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}
