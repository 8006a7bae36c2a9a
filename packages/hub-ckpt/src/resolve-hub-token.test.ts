import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import {
  giveToUnprivileged,
  runNodeUnprivileged,
  startHubServer,
  unprivilegedUnavailable,
  useTempDir,
} from '@soup/test-utils';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { HubAuthError } from './errors';
import { HubStore } from './hub-store';
import { openStore } from './open-store';
import { pushCheckpoint } from './push-checkpoint';
import { describeHubTokenSearch, resolveHubToken } from './resolve-hub-token';

/** A home with the four places laid out; each file written only when given. */
function layout(files: { tokenPath?: string; hfHome?: string; cache?: string }) {
  const root = useTempDir();
  const home = join(root, 'home');
  const paths = {
    tokenPath: join(root, 'secrets', 'hf-token'),
    hfHome: join(root, 'hf-home'),
    cache: join(home, '.cache', 'huggingface', 'token'),
  };
  const put = (path: string, text: string): void => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  };
  mkdirSync(home, { recursive: true });
  mkdirSync(paths.hfHome, { recursive: true });
  if (files.tokenPath !== undefined) put(paths.tokenPath, files.tokenPath);
  if (files.hfHome !== undefined) put(join(paths.hfHome, 'token'), files.hfHome);
  if (files.cache !== undefined) put(paths.cache, files.cache);
  return {
    root,
    home,
    paths,
    env: { HF_TOKEN_PATH: paths.tokenPath, HF_HOME: paths.hfHome, HOME: home } as Record<string, string | undefined>,
  };
}

describe('resolveHubToken: HF_TOKEN, then HF_TOKEN_PATH, then $HF_HOME/token, then ~/.cache/huggingface/token', () => {
  it('takes each source when it is the first one holding a token, in that order', () => {
    const all = layout({ tokenPath: 'hf_from_token_path\n', hfHome: 'hf_from_hf_home\n', cache: 'hf_from_cache\n' });
    expect(resolveHubToken({ env: { ...all.env, HF_TOKEN: 'hf_from_env' } })).toMatchObject({
      token: 'hf_from_env',
      place: 'HF_TOKEN',
      where: 'HF_TOKEN',
    });
    expect(resolveHubToken({ env: all.env })).toMatchObject({
      token: 'hf_from_token_path',
      place: 'HF_TOKEN_PATH',
      where: all.paths.tokenPath,
    });
    expect(resolveHubToken({ env: { ...all.env, HF_TOKEN_PATH: undefined } })).toMatchObject({
      token: 'hf_from_hf_home',
      place: 'HF_HOME',
      where: join(all.paths.hfHome, 'token'),
    });
    expect(resolveHubToken({ env: { HOME: all.home } })).toMatchObject({
      token: 'hf_from_cache',
      place: 'default',
      where: all.paths.cache,
    });
    // homeDir wins over env.HOME.
    expect(resolveHubToken({ env: {}, homeDir: all.home })).toMatchObject({ token: 'hf_from_cache', place: 'default' });
    const none = resolveHubToken({ env: { HOME: join(all.root, 'nobody') } });
    expect(none).toMatchObject({ token: null, place: null, where: null });
    expect(none.attempts.map((a) => [a.place, a.outcome])).toEqual([
      ['HF_TOKEN', 'unset'],
      ['HF_TOKEN_PATH', 'unset'],
      ['HF_HOME', 'unset'],
      ['default', 'missing'],
    ]);
  });

  it('falls through a missing, empty or whitespace-only file, and an empty or blank HF_TOKEN', () => {
    const t = layout({ tokenPath: '', hfHome: ' \n\r\n\t', cache: '\n  hf_cache_token  \r\n' });
    const r = resolveHubToken({ env: { ...t.env, HF_TOKEN: '' } });
    expect(r.token).toBe('hf_cache_token');
    expect(r.attempts.map((a) => [a.place, a.outcome])).toEqual([
      ['HF_TOKEN', 'empty'],
      ['HF_TOKEN_PATH', 'empty'],
      ['HF_HOME', 'empty'],
      ['default', 'found'],
    ]);
    expect(
      resolveHubToken({ env: { ...t.env, HF_TOKEN: ' \n ', HF_TOKEN_PATH: join(t.root, 'no-such-file') } }).attempts[1],
    ).toEqual({
      place: 'HF_TOKEN_PATH',
      where: join(t.root, 'no-such-file'),
      outcome: 'missing',
    });
  });

  it('trims spaces and line breaks from variables and files (CRLF files too)', () => {
    const t = layout({ tokenPath: '  hf_crlf_token\r\n' });
    expect(resolveHubToken({ env: t.env }).token).toBe('hf_crlf_token');
    expect(resolveHubToken({ env: { HF_TOKEN: '\thf_env_token \n' } }).token).toBe('hf_env_token');
  });

  it('skips an unreadable token file (a folder, no permission) and says so without throwing', () => {
    const t = layout({ cache: 'hf_cache_token' });
    mkdirSync(t.paths.tokenPath, { recursive: true }); // HF_TOKEN_PATH names a folder
    const r = resolveHubToken({ env: t.env });
    expect(r.token).toBe('hf_cache_token');
    expect(r.attempts[1]).toEqual({
      place: 'HF_TOKEN_PATH',
      where: t.paths.tokenPath,
      outcome: 'unreadable',
      error: 'EISDIR',
    });
    const eacces = resolveHubToken({
      env: t.env,
      readFile: () => {
        throw Object.assign(new Error('permission denied'), { code: 'EACCES' });
      },
    });
    expect(eacces.token).toBeNull();
    expect(eacces.attempts.map((a) => a.error ?? a.outcome)).toEqual(['unset', 'EACCES', 'EACCES', 'EACCES']);
  });

  // Root reads any file: the real mode-000 file is read in a child under another uid (setpriv to nobody when root).
  it.skipIf(unprivilegedUnavailable() !== null)(
    'a real mode-000 token file is unreadable, said so, not thrown (in a child under another uid, also as root)',
    async () => {
      const locked = layout({ hfHome: 'hf_locked', cache: 'hf_cache_token' });
      giveToUnprivileged(locked.root);
      chmodSync(join(locked.paths.hfHome, 'token'), 0);
      const dist = pathToFileURL(join(import.meta.dirname, '..', 'dist', 'index.js')).href;
      const code = `const { resolveHubToken } = await import(${JSON.stringify(dist)});
const r = resolveHubToken({ env: { HF_HOME: ${JSON.stringify(locked.paths.hfHome)}, HOME: ${JSON.stringify(locked.home)} } });
process.stdout.write(JSON.stringify({ uid: process.getuid(), token: r.token, attempts: r.attempts }));`;
      const r = await runNodeUnprivileged(code, { env: { PATH: process.env.PATH ?? '' } });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as {
        uid: number;
        token: string | null;
        attempts: { place: string; outcome: string; error?: string }[];
      };
      expect(out.uid).not.toBe(0);
      expect(out.attempts[2]).toMatchObject({ outcome: 'unreadable', error: 'EACCES' });
      // The next place is still tried: the cache file holds the token.
      expect(out.token).toBe('hf_cache_token');
    },
  );

  it('honours XDG_CACHE_HOME for the default file, the legacy HUGGING_FACE_HUB_TOKEN, and ~ / $VAR in paths', () => {
    const t = layout({});
    const xdg = join(t.root, 'xdg');
    mkdirSync(join(xdg, 'huggingface'), { recursive: true });
    writeFileSync(join(xdg, 'huggingface', 'token'), 'hf_xdg_token\n');
    expect(resolveHubToken({ env: { HOME: t.home, XDG_CACHE_HOME: xdg } })).toMatchObject({
      token: 'hf_xdg_token',
      where: join(xdg, 'huggingface', 'token'),
    });
    expect(resolveHubToken({ env: { HOME: t.home, HUGGING_FACE_HUB_TOKEN: 'hf_legacy' } })).toMatchObject({
      token: 'hf_legacy',
      where: 'HUGGING_FACE_HUB_TOKEN',
    });
    expect(resolveHubToken({ env: { HF_TOKEN: 'hf_new', HUGGING_FACE_HUB_TOKEN: 'hf_legacy' } }).token).toBe('hf_new');
    mkdirSync(join(t.home, 'tok'), { recursive: true });
    writeFileSync(join(t.home, 'tok', 'hf'), 'hf_tilde');
    expect(resolveHubToken({ env: { HOME: t.home, HF_TOKEN_PATH: '~/tok/hf' } })).toMatchObject({
      token: 'hf_tilde',
      where: join(t.home, 'tok', 'hf'),
    });
    expect(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a path that names a variable and is not expanded
      resolveHubToken({ env: { HOME: t.home, MYDIR: join(t.home, 'tok'), HF_TOKEN_PATH: '${MYDIR}/hf' } }).token,
    ).toBe('hf_tilde');
  });

  it('describes every place it looked without the token', () => {
    const t = layout({ cache: 'hf_secret_in_cache_file' });
    const missing = resolveHubToken({ env: { HOME: join(t.root, 'nobody') } });
    expect(describeHubTokenSearch(missing)).toBe(
      `HF_TOKEN (unset), HF_TOKEN_PATH (unset), $HF_HOME/token (HF_HOME unset), ` +
        `${join(t.root, 'nobody', '.cache', 'huggingface', 'token')} (no such file)`,
    );
    const found = resolveHubToken({ env: { HOME: t.home, HF_TOKEN_PATH: join(t.root, 'x') } });
    expect(describeHubTokenSearch(found)).toBe(
      `HF_TOKEN (unset), HF_TOKEN_PATH=${join(t.root, 'x')} (no such file), $HF_HOME/token (HF_HOME unset), ` +
        `${t.paths.cache} (found)`,
    );
    expect(describeHubTokenSearch(found)).not.toContain('hf_secret');
  });
});

describe('HubStore / openStore take their default token from the chain', () => {
  it('authenticates with a token read from a file, and never shows it (inspect, errors, retry logs)', async () => {
    const server = await startHubServer({ dir: useTempDir() });
    try {
      const t = layout({ cache: `${server.token}\n` });
      const logs: string[] = [];
      const store = openStore({
        repo: 'soup-test/file-token',
        endpoint: server.url,
        env: { HOME: t.home },
        logger: { warn: (l) => logs.push(l) },
      }) as HubStore;
      expect(store.hasToken).toBe(true);
      expect(inspect(store, { depth: 10, showHidden: true })).not.toContain(server.token);
      expect(JSON.stringify(store)).not.toContain(server.token);
      const work = useTempDir();
      const ck = writeCheckpoint({ root: work, step: 3, run: 'run-t' });
      server.setFaults({ commit500: { count: 1 } }); // one retry: a log line
      const pushed = await pushCheckpoint({ store, step: 3, dir: ck.dir, run: 'run-t' });
      expect(pushed.step).toBe(3);
      expect(server.files('soup-test/file-token')?.['latest.json']).toBeDefined();
      server.setFaults({ unauthorized: true });
      const err = await store.list({ prefix: '' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HubAuthError);
      const seen = [
        inspect(err, { depth: 10, showHidden: true }),
        (err as Error).message,
        (err as Error).stack,
        JSON.stringify(err),
        ...logs,
      ].join('\n');
      expect(seen).not.toContain(server.token);
      expect(logs.length).toBeGreaterThan(0);
      // An explicit token wins over the chain and is trimmed.
      server.setFaults({});
      const explicit = new HubStore({
        repo: 'soup-test/file-token',
        endpoint: server.url,
        token: ` ${server.token}\n`,
        env: { HOME: join(t.root, 'nobody') },
      });
      expect((await explicit.list({ prefix: '' })).length).toBeGreaterThan(0);
      expect(new HubStore({ repo: 'a/b', token: '  \n', env: { HF_TOKEN: 'hf_ignored' } }).hasToken).toBe(false);
      expect(new HubStore({ repo: 'a/b', env: { HOME: join(t.root, 'nobody') } }).hasToken).toBe(false);
    } finally {
      await server.close();
    }
  });
});
