// Acceptance: the two-session scenario of p4_stop_probe.py, on CPU, through the real bin, against
// the Hub-protocol test server: leg 1 stops at a segment boundary, the disk is wiped, leg 2 resumes
// from the Hub to the horizon; the final parameters equal an uninterrupted run's; a third leg with a
// changed horizon is refused as stale.
import { HubStore } from '@soup/hub-ckpt';
import { runNode, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetPath } from './_assets';
import { EXIT_CODES } from './exit-codes';
import type { SessionResult as RunJson } from '@soup/supervisor';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const HORIZON = 12;
const PUSH_EVERY = 4;
const STOP = 8;
const BATCH = 4;
const MAX_LENGTH = 16;

function configText(): string {
  return `base: soup/e2e-gpt
model: {vocab_size: 256, d_model: 32, n_heads: 2, n_layers: 2, d_ff: 64}
data:
  train: ${assetPath('corpus/train.txt')}
  val: ${assetPath('corpus/val.txt')}
  max_length: ${MAX_LENGTH}
training:
  steps: ${HORIZON}
  batch_size: ${BATCH}
  micro_batch_size: ${BATCH}
  lr: 0.01
  warmup_steps: 2
  threads: 1
  val_batches: 4
`;
}

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
});

function soup(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 120_000,
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      NO_COLOR: '1',
      HF_TOKEN: server.token,
      HF_ENDPOINT: server.url,
      SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
      ...env,
    },
  });
}

function runJson(stdout: string): RunJson {
  const line = stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
  if (!line) throw new Error(`no RUN_JSON line in:\n${stdout}`);
  return JSON.parse(line.slice('RUN_JSON '.length)) as RunJson;
}

function steps(repo: string): number[] {
  const files = Object.keys(server.files(repo) ?? {});
  return [
    ...new Set(
      files
        .map((f) => /^ckpt\/checkpoint-(\d+)\//.exec(f)?.[1])
        .filter((s): s is string => s !== undefined)
        .map(Number),
    ),
  ].sort((a, b) => a - b);
}

async function pointer(repo: string): Promise<Record<string, unknown>> {
  const store = new HubStore({ repo, token: server.token, endpoint: server.url });
  const raw = await store.readFile({ path: 'latest.json' });
  return JSON.parse(new TextDecoder().decode(raw!)) as Record<string, unknown>;
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');
const range = (from: number, to: number, by: number): number[] =>
  Array.from({ length: Math.floor((to - from) / by) + 1 }, (_, i) => from + i * by);

describe('[slow] soup train: two sessions through the Hub', { timeout: 300_000 }, () => {
  it(
    'stops at a segment, resumes on an empty disk, matches an uninterrupted run, refuses a changed ' + 'horizon',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), configText());
      const repo = 'e2e/run-ckpt';
      const common = [
        'train',
        '-c',
        'soup.yaml',
        '--repo',
        repo,
        '--push-every-steps',
        String(PUSH_EVERY),
        '--output-dir',
        'out',
      ];

      // Leg 1: stop at a segment boundary.
      const leg1 = await soup([...common, '--stop-after-steps', String(STOP)], cwd);
      expect(leg1.code, leg1.stderr).toBe(EXIT_CODES.segmentSaved);
      const rj1 = runJson(leg1.stdout);
      expect(rj1).toMatchObject({
        final_step: STOP,
        segment_stop: true,
        val_skipped: true,
        val_loss: null,
        batch_size: BATCH,
        grad_ckpt: false,
      });
      expect(rj1.tokens_consumed).toBe(STOP * BATCH * MAX_LENGTH);
      expect(steps(repo)).toEqual(range(PUSH_EVERY, STOP, PUSH_EVERY));
      const p1 = await pointer(repo);
      expect(p1).toMatchObject({ step: STOP, path_in_repo: `ckpt/checkpoint-${STOP}`, terminal: false, run: rj1.run });
      expect(Object.keys(server.files(repo) ?? {}).some((f) => f.startsWith('final/'))).toBe(false);
      // soup train words its run and micro-batch itself: the supervisor's lines for them are not printed as well, nor
      // a warning of an exit 0 before the horizon (--stop-after-steps stops there by design). The closing sentence
      // is the supervisor's, once, naming the stop.
      const supervisorWords =
        /^soup: (warning: )?(run soup-\S+: .*; checkpoints in |micro \d+ × |the trainer exited 0)/m;
      expect(leg1.stdout + leg1.stderr).not.toMatch(supervisorWords);
      const closing = (out: string) => out.match(/^soup: (segment saved \(|run complete: ).*$/gm) ?? [];
      expect(closing(leg1.stdout + leg1.stderr)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^soup: segment saved \\(--stop-after-steps; validation skipped\\): step ${STOP} is saved in .+; ` +
              'run the same command again to continue$',
          ),
        ),
      ]);

      // The session ends: nothing local survives.
      rmSync(join(cwd, 'out'), { recursive: true, force: true });

      // Leg 2: resume from the Hub to the horizon.
      const leg2 = await soup([...common, '--resume', 'auto'], cwd);
      expect(leg2.code, leg2.stderr).toBe(0);
      expect(leg2.stdout).toContain(`resuming from ckpt/checkpoint-${STOP} at step ${STOP}`);
      expect(leg2.stdout + leg2.stderr).not.toMatch(supervisorWords);
      expect(closing(leg2.stdout + leg2.stderr)).toEqual([
        expect.stringMatching(
          new RegExp(`^soup: run complete: pushed final/ \\(.*, step ${HORIZON}, verified\\) with a terminal pointer$`),
        ),
      ]);
      const rj2 = runJson(leg2.stdout);
      expect(rj2).toMatchObject({
        final_step: HORIZON,
        segment_stop: false,
        val_skipped: false,
        start_step: STOP,
        batch_size: BATCH,
        run: rj1.run,
        final_pushed: true,
      });
      expect(rj2.tokens_consumed).toBe(HORIZON * BATCH * MAX_LENGTH);
      expect(rj2.val_loss).toEqual(expect.any(Number));
      expect(Number.isFinite(rj2.val_loss)).toBe(true);
      expect(Number.isFinite(rj2.final_loss)).toBe(true);
      expect(rj2.final_loss!).toBeLessThan(rj1.initial_loss!);
      expect(steps(repo)).toEqual(range(PUSH_EVERY, HORIZON, PUSH_EVERY));
      expect(await pointer(repo)).toMatchObject({ step: HORIZON, path_in_repo: 'final', terminal: true, run: rj1.run });
      const files = server.files(repo)!;
      expect(
        Object.keys(files)
          .filter((f) => f.startsWith('final/'))
          .sort(),
      ).toEqual([
        'final/config.json',
        'final/generation_config.json',
        'final/manifest.json',
        'final/model.safetensors',
        'final/optimizer.safetensors',
        'final/soup_run.json',
        'final/trainer_state.json',
      ]);
      const resumedFinal = sha(join(cwd, 'out', 'final', 'model.safetensors'));
      expect(files['final/model.safetensors']?.lfs?.oid).toBe(resumedFinal);

      // The same run without interruption, in another repo: byte-identical final parameters.
      const straight = await soup(
        [
          'train',
          '-c',
          'soup.yaml',
          '--repo',
          'e2e/straight-ckpt',
          '--push-every-steps',
          String(PUSH_EVERY),
          '--output-dir',
          'straight',
        ],
        cwd,
      );
      expect(straight.code, straight.stderr).toBe(0);
      const rjs = runJson(straight.stdout);
      expect(rjs.run).toBe(rj1.run);
      expect(rjs.final_loss).toBe(rj2.final_loss);
      expect(rjs.val_loss).toBe(rj2.val_loss);
      expect(sha(join(cwd, 'straight', 'final', 'model.safetensors'))).toBe(resumedFinal);

      // Running again is a no-op: the pointer is terminal for this run.
      const again = await soup([...common, '--resume', 'auto'], cwd);
      expect(again.code, again.stderr).toBe(0);
      expect(runJson(again.stdout)).toMatchObject({ status: 'complete', final_step: HORIZON, val_loss: rj2.val_loss });

      // Leg 3: a changed horizon is another run: refused as stale, one line, exit 6.
      const leg3 = await soup([...common, '--steps', String(HORIZON + 4)], cwd);
      expect(leg3.code).toBe(EXIT_CODES.resume);
      expect(leg3.stderr.trim().split('\n')).toHaveLength(1);
      expect(leg3.stderr).toMatch(
        /^soup: resume refused as stale: .* holds run soup-[0-9a-f]+ \(step 12\), not this run soup-[0-9a-f]+; changed: training\.steps 12 → 16\./,
      );
    },
  );

  it('a missing token, a refused token and an unreachable hub: one line each, exit 4 / 4 / 5', async () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'soup.yaml'), configText());
    const args = ['train', '-c', 'soup.yaml', '--repo', 'e2e/errors', '--output-dir', 'out'];
    const noToken = await soup(args, cwd, { HF_TOKEN: '' });
    expect(noToken.code).toBe(EXIT_CODES.auth);
    expect(noToken.stderr).toBe(
      'soup: --repo e2e/errors is a Hugging Face repo and no token was found; looked in HF_TOKEN (empty), ' +
        'HF_TOKEN_PATH (unset), $HF_HOME/token (HF_HOME unset), ' +
        `${join(cwd, '.cache', 'huggingface', 'token')} (no such file): export HF_TOKEN=<a token with write ` +
        `access>, or run \`hf auth login\`, or use file://<dir> for a directory store\n`,
    );
    const badToken = await soup(args, cwd, { HF_TOKEN: 'hf_wrong_token_123' });
    expect(badToken.code).toBe(EXIT_CODES.auth);
    expect(badToken.stderr.trim().split('\n')).toHaveLength(1);
    expect(badToken.stderr).toMatch(/^soup: .*401/);
    expect(badToken.stderr).not.toContain('hf_wrong_token_123');
    const port = await closedPort();
    const unreachable = await soup(args, cwd, { HF_ENDPOINT: `http://127.0.0.1:${port}`, SOUP_HUB_RETRIES: '0' });
    expect(unreachable.code).toBe(EXIT_CODES.hub);
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    expect(unreachable.stderr).toMatch(new RegExp(`^soup: .*127\\.0\\.0\\.1:${port}.* failed`));
  });
});
