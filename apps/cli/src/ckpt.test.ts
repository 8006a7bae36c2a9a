// soup ckpt for a trainer soup does not know (plain files, as a PyTorch loop would save them),
// through the real bin against the Hub-protocol test server.
import { runNode, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { SOUP_BIN, writeFakeCheckpoint } from '../test/run-helpers';

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
});

function soup(args: string[], cwd: string) {
  return runNode([SOUP_BIN, ...args], {
    cwd,
    timeoutMs: 60_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', HF_TOKEN: server.token, HF_ENDPOINT: server.url },
  });
}

describe('[slow] soup ckpt', { timeout: 120_000 }, () => {
  it('push → status → resume (pull) → final, refusing another run, verifying every byte', async () => {
    const cwd = useTempDir();
    const repo = ['--repo', 'torch/run-ckpt'];
    writeFakeCheckpoint(cwd, 100);
    const p1 = await soup(
      ['ckpt', 'push', 'out/checkpoint-100', '--step', '100', '--run', 'torch-a', ...repo, '--json'],
      cwd,
    );
    expect(p1.code, p1.stderr).toBe(0);
    expect(JSON.parse(p1.stdout)).toMatchObject({
      ok: true,
      step: 100,
      path_in_repo: 'ckpt/checkpoint-100',
      files: 2,
      commits: 2,
    });
    writeFakeCheckpoint(cwd, 200);
    const p2 = await soup(
      ['ckpt', 'push', 'out/checkpoint-200', '--step', '200', '--run', 'torch-a', '--keep-local', '1', ...repo],
      cwd,
    );
    expect(p2.code, p2.stderr).toBe(0);
    expect(p2.stdout).toContain('pushed ckpt/checkpoint-200');
    expect(existsSync(join(cwd, 'out', 'checkpoint-100'))).toBe(false); // pruned locally after the pointer moved

    const status = JSON.parse((await soup(['ckpt', 'status', ...repo, '--json'], cwd)).stdout) as Record<
      string,
      unknown
    >;
    expect(status).toMatchObject({
      exists: true,
      pointer: { step: 200, path_in_repo: 'ckpt/checkpoint-200', run: 'torch-a', terminal: false },
      pointed_verified: true,
      has_final: false,
    });
    expect((status.checkpoints as { step: number }[]).map((c) => c.step)).toEqual([100, 200]);

    const resume = await soup(['ckpt', 'resume', '--run', 'torch-a', '--dest', 'pulled', ...repo, '--json'], cwd);
    expect(resume.code, resume.stderr).toBe(0);
    expect(JSON.parse(resume.stdout)).toMatchObject({
      outcome: 'resume',
      step: 200,
      path_in_repo: 'ckpt/checkpoint-200',
    });
    expect(readFileSync(join(cwd, 'pulled', 'model.safetensors'))).toEqual(
      readFileSync(join(cwd, 'out', 'checkpoint-200', 'model.safetensors')),
    );

    const stale = await soup(['ckpt', 'resume', '--run', 'torch-b', ...repo], cwd);
    expect(stale.code).toBe(EXIT_CODES.resume);
    expect(stale.stderr).toMatch(
      /^soup: resume refused as stale: .* holds run torch-a \(step 200\), not this run torch-b\. .*--repo/,
    );
    expect(stale.stderr.trim().split('\n')).toHaveLength(1);

    const fin = await soup(['ckpt', 'final', 'out/checkpoint-200', '--run', 'torch-a', ...repo, '--json'], cwd);
    expect(fin.code, fin.stderr).toBe(0);
    expect(JSON.parse(fin.stdout)).toMatchObject({ terminal: true, step: 200, path_in_repo: 'final' });
    const done = JSON.parse(
      (await soup(['ckpt', 'resume', '--run', 'torch-a', ...repo, '--json'], cwd)).stdout,
    ) as Record<string, unknown>;
    expect(done).toMatchObject({ outcome: 'complete', step: 200, path_in_repo: 'final' });

    // A store that serves altered bytes: the pull refuses (exit 8) and moves nothing into place.
    server.setFaults({ wrongBytes: { count: 10, pathIncludes: 'model.safetensors' } });
    const bad = await soup(['ckpt', 'pull', '--final', '--dest', 'final-copy', ...repo], cwd);
    server.setFaults({});
    expect(bad.code).toBe(EXIT_CODES.integrity);
    expect(bad.stderr).toMatch(/^soup: .*model\.safetensors: downloaded .* sha256 .* the manifest says/);
    expect(existsSync(join(cwd, 'final-copy'))).toBe(false);
    const good = await soup(['ckpt', 'pull', '--final', '--dest', 'final-copy', ...repo], cwd);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toContain('every sha256 matches the manifest');
  });

  it('directory stores work the same, and bad arguments are one line', async () => {
    const cwd = useTempDir();
    writeFakeCheckpoint(cwd, 5);
    const push = await soup(
      ['ckpt', 'push', 'out/checkpoint-5', '--step', '5', '--run', 'r', '--repo', 'file://store'],
      cwd,
    );
    expect(push.code, push.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8'))).toMatchObject({
      step: 5,
      path_in_repo: 'ckpt/checkpoint-5',
      run: 'r',
    });
    const missing = await soup(['ckpt', 'push', 'nope', '--step', '5', '--run', 'r', '--repo', 'file://store'], cwd);
    expect(missing.code).toBe(EXIT_CODES.usage);
    expect(missing.stderr).toBe('soup: nope is not a checkpoint folder (no such directory)\n');
    const badRepo = await soup(['ckpt', 'status', '--repo', 'not a repo'], cwd);
    expect(badRepo.code).toBe(EXIT_CODES.usage);
    expect(badRepo.stderr).toBe(
      'soup: --repo "not a repo" is neither a Hub repo id (user/name) nor a directory (file://path)\n',
    );
    const noStep = await soup(['ckpt', 'final', 'out', '--run', 'r', '--repo', 'file://store'], cwd);
    expect(noStep.code).toBe(EXIT_CODES.usage);
    expect(noStep.stderr).toBe('soup: out has no trainer_state.json with a global_step: pass --step N\n');
    // A --dest that exists: refused in the flags' words (the folder as typed, --force), for pull and resume alike.
    mkdirSync(join(cwd, 'taken'));
    for (const args of [
      ['ckpt', 'pull', '--dest', 'taken', '--repo', 'file://store'],
      ['ckpt', 'resume', '--run', 'r', '--dest', 'taken', '--repo', 'file://store'],
    ]) {
      const taken = await soup(args, cwd);
      expect(taken.code, args[1]).toBe(EXIT_CODES.usage);
      expect(taken.stderr).toBe(
        'soup: --dest taken already exists: pull into a new path, or pass --force to replace it\n',
      );
    }
  });
});
