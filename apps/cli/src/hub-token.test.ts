// The Hugging Face token chain as the CLI uses it (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token,
// ~/.cache/huggingface/token), through the real bin against the Hub-protocol test server; the token,
// wherever it came from, never reaches stdout, stderr or --json output.
import { runNode, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
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

function soup(args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return runNode([SOUP_BIN, ...args], {
    cwd,
    timeoutMs: 60_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', HF_ENDPOINT: server.url, ...env },
  });
}

function put(path: string, text: string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

describe('[slow] soup and the Hugging Face token chain', { timeout: 120_000 }, () => {
  it('pushes with the token of each source in turn; never prints it, not even in errors or --json', async () => {
    const cwd = useTempDir();
    const t = server.token;
    const sources: [string, NodeJS.ProcessEnv][] = [
      ['HF_TOKEN', { HF_TOKEN: `${t}\n` }],
      ['HF_TOKEN_PATH', { HF_TOKEN_PATH: put(join(cwd, 'secrets', 'tok'), `${t}\r\n`) }],
      ['$HF_HOME/token', { HF_HOME: join(put(join(cwd, 'hf-home', 'token'), `  ${t}  \n`), '..') }],
      ['~/.cache/huggingface/token', {}],
    ];
    let step = 0;
    for (const [name, env] of sources) {
      if (name === '~/.cache/huggingface/token') put(join(cwd, '.cache', 'huggingface', 'token'), `${t}\n`);
      step += 10;
      writeFakeCheckpoint(cwd, step, { modelBytes: 20_000 });
      const r = await soup(
        [
          'ckpt',
          'push',
          `out/checkpoint-${step}`,
          '--step',
          String(step),
          '--run',
          'tok-run',
          '--repo',
          'tok/run',
          '--json',
        ],
        cwd,
        env,
      );
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout), name).toMatchObject({ ok: true, step, path_in_repo: `ckpt/checkpoint-${step}` });
      expect(r.stdout + r.stderr, name).not.toContain(t);
    }

    // A refused token read from a file: exit 4, one line, no token anywhere (human and --json).
    server.setFaults({ unauthorized: true });
    try {
      for (const json of [false, true]) {
        const r = await soup(['ckpt', 'status', '--repo', 'tok/run', ...(json ? ['--json'] : [])], cwd, {});
        expect(r.code, r.stderr).toBe(EXIT_CODES.auth);
        expect(r.stderr).toMatch(/401/);
        expect(r.stdout + r.stderr).not.toContain(t);
        if (json) expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { exit_code: EXIT_CODES.auth } });
      }
    } finally {
      server.setFaults({});
    }
    // With SOUP_DEBUG=1 (stack traces printed) the token still stays out.
    const debug = await soup(['ckpt', 'status', '--repo', 'tok/run', '--json'], cwd, { SOUP_DEBUG: '1' });
    expect(debug.code, debug.stderr).toBe(0);
    expect(debug.stdout + debug.stderr).not.toContain(t);
  });

  it('HF_TOKEN wins over the files; an empty file falls through to the next place', async () => {
    const cwd = useTempDir();
    put(join(cwd, '.cache', 'huggingface', 'token'), 'hf_wrong_cache_token_123456\n');
    writeFakeCheckpoint(cwd, 1, { modelBytes: 20_000 });
    const args = ['ckpt', 'push', 'out/checkpoint-1', '--step', '1', '--run', 'order-run', '--repo', 'tok/order'];
    // The cache file holds a wrong token: refused (proves it was the one used) ...
    const wrong = await soup(args, cwd, { HF_TOKEN_PATH: put(join(cwd, 'empty-token'), '\n') });
    expect(wrong.code).toBe(EXIT_CODES.auth);
    expect(wrong.stdout + wrong.stderr).not.toContain('hf_wrong_cache_token_123456');
    // ... and HF_TOKEN overrides it.
    const right = await soup(args, cwd, { HF_TOKEN: server.token });
    expect(right.code, right.stderr).toBe(0);
  });

  it('no token anywhere: a write is refused up front, naming all four places; exit 4', async () => {
    const cwd = useTempDir();
    writeFakeCheckpoint(cwd, 1, { modelBytes: 20_000 });
    const r = await soup(['ckpt', 'push', 'out/checkpoint-1', '--step', '1', '--run', 'r', '--repo', 'tok/none'], cwd, {
      HF_TOKEN_PATH: join(cwd, 'nope'),
      HF_HOME: join(cwd, 'hf-home'),
    });
    expect(r.code).toBe(EXIT_CODES.auth);
    expect(r.stderr).toBe(
      `soup: --repo tok/none is a Hugging Face repo and no token was found; looked in HF_TOKEN (unset), ` +
        `HF_TOKEN_PATH=${join(cwd, 'nope')} (no such file), ` +
        `${join(cwd, 'hf-home', 'token')} (no such file), ${join(cwd, '.cache', 'huggingface', 'token')}` +
        ` (no such file): ` +
        'export HF_TOKEN=<a token with write access>, or run `hf auth login`, or use file://<dir> for a directory ' +
        'store\n',
    );
    expect(server.requests.some((q) => q.path.includes('tok/none'))).toBe(false);
  });
});
