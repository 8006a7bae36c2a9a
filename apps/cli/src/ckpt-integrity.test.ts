// soup ckpt against the integrity holes of issue 14, through the real bin: `resume` never writes
// latest.json without --repair, falls back past corruption at rest, the pointer never goes backwards
// without --force, and HF_ENDPOINT is checked up front.
import { runNode, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
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
  expect(server.errors).toEqual([]);
});

function soup(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  return runNode([SOUP_BIN, ...args], {
    cwd,
    timeoutMs: 60_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', HF_TOKEN: server.token, HF_ENDPOINT: server.url, ...env },
  });
}

function flipByte(file: string): void {
  const b = readFileSync(file);
  b[100] = (b[100] ?? 0) ^ 0xff;
  writeFileSync(file, b);
}

describe('[slow] soup ckpt integrity', { timeout: 120_000 }, () => {
  it.each(['dir', 'hub'] as const)(
    '%s: `ckpt resume` leaves latest.json byte-identical; --fallback walks past corruption at rest; --repair rewrites',
    async (kind) => {
      const cwd = useTempDir();
      const repoName = `int/${kind}-resume-${randomBytes(3).toString('hex')}`;
      const repo = ['--repo', kind === 'dir' ? 'file://store' : repoName];
      for (const step of [10, 20]) {
        writeFakeCheckpoint(cwd, step);
        const p = await soup(
          ['ckpt', 'push', `out/checkpoint-${step}`, '--step', String(step), '--run', 'r', ...repo],
          cwd,
        );
        expect(p.code, p.stderr).toBe(0);
      }
      if (kind === 'dir') flipByte(join(cwd, 'store', 'ckpt', 'checkpoint-20', 'model.safetensors'));
      else server.corruptAtRest(repoName, 'ckpt/checkpoint-20/model.safetensors');
      const latest = async (): Promise<Buffer> =>
        kind === 'dir'
          ? readFileSync(join(cwd, 'store', 'latest.json'))
          : Buffer.from(
              await (
                await fetch(`${server.url}/${repoName}/resolve/main/latest.json`, {
                  headers: { Authorization: `Bearer ${server.token}` },
                })
              ).arrayBuffer(),
            );
      const before = await latest();

      // `ckpt pull` of the pointed checkpoint refuses the corrupt one: exit 8, nothing left behind.
      const pull = await soup(['ckpt', 'pull', '--dest', 'p', ...repo], cwd);
      expect(pull.code, pull.stderr).toBe(EXIT_CODES.integrity);
      expect(pull.stderr).toMatch(/checkpoint-20.*model\.safetensors/);
      expect(existsSync(join(cwd, 'p'))).toBe(false);
      expect(existsSync(join(cwd, 'p.soup-pull'))).toBe(false);

      const refused = await soup(['ckpt', 'resume', '--run', 'r', ...repo], cwd);
      expect(refused.code).toBe(EXIT_CODES.resume);
      expect(refused.stderr).toMatch(/checkpoint-20.*model\.safetensors.*Use --fallback/);

      const fb = await soup(['ckpt', 'resume', '--run', 'r', '--fallback', '--dest', 'pulled', ...repo, '--json'], cwd);
      expect(fb.code, fb.stderr).toBe(0);
      const j = JSON.parse(fb.stdout) as {
        outcome: string;
        step: number;
        via: string;
        repaired: boolean;
        skipped: Array<{ step: number }>;
      };
      expect(j).toMatchObject({ outcome: 'resume', step: 10, via: 'fallback', previous_step: 20, repaired: false });
      expect(j.skipped.map((k) => k.step)).toEqual([20]);
      expect(readFileSync(join(cwd, 'pulled', 'model.safetensors'))).toEqual(
        readFileSync(join(cwd, 'out', 'checkpoint-10', 'model.safetensors')),
      );
      expect(existsSync(join(cwd, 'pulled.soup-pull'))).toBe(false);
      expect((await latest()).equals(before)).toBe(true); // ckpt resume only reports

      const fix = await soup(['ckpt', 'resume', '--run', 'r', '--fallback', '--repair', ...repo, '--json'], cwd);
      expect(fix.code, fix.stderr).toBe(0);
      expect(JSON.parse(fix.stdout)).toMatchObject({ step: 10, repaired: true, dir: null });
      expect(JSON.parse((await latest()).toString('utf8'))).toMatchObject({
        step: 10,
        path_in_repo: 'ckpt/checkpoint-10',
      });
    },
  );

  it('`ckpt push` onto a complete run is refused (exit 2, pointer unchanged) unless --force', async () => {
    const cwd = useTempDir();
    const repo = ['--repo', 'file://store'];
    writeFakeCheckpoint(cwd, 10);
    expect((await soup(['ckpt', 'push', 'out/checkpoint-10', '--step', '10', '--run', 'r', ...repo], cwd)).code).toBe(
      0,
    );
    expect((await soup(['ckpt', 'final', 'out/checkpoint-10', '--run', 'r', '--step', '10', ...repo], cwd)).code).toBe(
      0,
    );
    const before = readFileSync(join(cwd, 'store', 'latest.json'));
    writeFakeCheckpoint(cwd, 5, { root: 'x' });
    const back = await soup(['ckpt', 'push', 'x/checkpoint-5', '--step', '5', '--run', 'r', ...repo], cwd);
    expect(back.code).toBe(EXIT_CODES.usage);
    expect(back.stderr).toMatch(
      /^soup: .*latest\.json names final \(step 10, terminal: the run is complete\).*--force/,
    );
    expect(readFileSync(join(cwd, 'store', 'latest.json')).equals(before)).toBe(true);
    const forced = await soup(['ckpt', 'push', 'x/checkpoint-5', '--step', '5', '--run', 'r', '--force', ...repo], cwd);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8'))).toMatchObject({
      step: 5,
      terminal: false,
    });
    const keep1 = await soup(
      ['ckpt', 'push', 'x/checkpoint-5', '--step', '5', '--run', 'r', '--keep-remote', '1', ...repo],
      cwd,
    );
    expect(keep1.code).toBe(EXIT_CODES.usage);
  });

  it('HF_ENDPOINT other than https:// (or http:// to loopback) is refused up front with exit 2', async () => {
    const cwd = useTempDir();
    writeFakeCheckpoint(cwd, 1);
    for (const endpoint of ['http://example.com', 'ftp://127.0.0.1', 'not a url', 'https://user:pw@hub.example']) {
      const r = await soup(['ckpt', 'status', '--repo', 'a/b'], cwd, { HF_ENDPOINT: endpoint });
      expect(r.code, `${endpoint}: ${r.stderr}`).toBe(EXIT_CODES.usage);
      expect(r.stderr).toMatch(/^soup: HF_ENDPOINT /);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    // http:// to a loopback address is fine (a local mirror, this test server).
    expect((await soup(['ckpt', 'status', '--repo', 'a/b'], cwd)).code).toBe(0);

    // "Before the token goes anywhere": endpoints that WOULD reach a listener on this machine if they
    // were not refused (0.0.0.0 connects to the local host; credentials in a loopback URL) are refused,
    // and the listener sees no connection at all, not even for a push that carries the token.
    const connections: string[] = [];
    const listener = createServer((sock) => {
      connections.push(`${sock.remoteAddress}:${sock.remotePort}`);
      sock.destroy();
    });
    await new Promise<void>((done) => listener.listen(0, '0.0.0.0', done));
    try {
      const port = (listener.address() as AddressInfo).port;
      for (const endpoint of [`http://0.0.0.0:${port}`, `http://user:pw@127.0.0.1:${port}`]) {
        const r = await soup(['ckpt', 'push', 'out/checkpoint-1', '--step', '1', '--run', 'r', '--repo', 'a/b'], cwd, {
          HF_ENDPOINT: endpoint,
        });
        expect(r.code, `${endpoint}: ${r.stderr}`).toBe(EXIT_CODES.usage);
        expect(r.stderr).toMatch(/^soup: HF_ENDPOINT /);
      }
      expect(connections).toEqual([]);
      // The listener works: a plain loopback http:// endpoint (accepted) does reach it.
      await soup(['ckpt', 'status', '--repo', 'a/b'], cwd, {
        HF_ENDPOINT: `http://127.0.0.1:${port}`,
        SOUP_HUB_RETRIES: '0',
      });
      expect(connections.length).toBeGreaterThan(0);
    } finally {
      await new Promise((done) => listener.close(done));
    }
    // a directory store does not use HF_ENDPOINT at all
    expect(
      (await soup(['ckpt', 'status', '--repo', 'file://s'], cwd, { HF_ENDPOINT: 'http://example.com' })).code,
    ).toBe(0);
  });
});
