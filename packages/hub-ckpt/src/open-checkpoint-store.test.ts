import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { DirStore } from './dir-store';
import { HubAuthError, InvalidCheckpointOptionError } from './errors';
import { HubStore } from './hub-store';
import { checkEndpoint, defaultStoreDir, openCheckpointStore } from './open-checkpoint-store';

const base = { needsWrite: true, cwd: '/work', warn: () => {} };

describe('openCheckpointStore', () => {
  it('a directory for file://, a Hub repo for user/name; an empty HF_ENDPOINT is unset', () => {
    const home = useTempDir();
    expect(openCheckpointStore({ ...base, repo: 'file://runs/a', env: {} })).toBeInstanceOf(DirStore);
    const hub = openCheckpointStore({
      ...base,
      repo: 'org/run',
      env: { HF_TOKEN: 'hf_abcdef', HF_ENDPOINT: '', HOME: home },
    });
    expect(hub).toBeInstanceOf(HubStore);
    expect(hub.description).toBe('hub model org/run @ https://huggingface.co');
  });

  it('refuses what is neither a repo id nor a directory, naming the flag', () => {
    expect(() => openCheckpointStore({ ...base, repo: 'no-slash', env: {}, flag: 'hub.repo' })).toThrow(
      'hub.repo "no-slash" is neither a Hub repo id (user/name) nor a directory (file://path)',
    );
    expect(() => openCheckpointStore({ ...base, repo: 'no-slash', env: {} })).toThrow(InvalidCheckpointOptionError);
  });

  it('a refused path or Hub page URL says what it likely meant', () => {
    const cases: [string, string][] = [
      ['./ckstore', 'file://./ckstore'],
      ['/mnt/ckpt', 'file:///mnt/ckpt'],
      ['https://huggingface.co/me/x', 'me/x'],
      ['https://huggingface.co/me/x/tree/main', 'me/x'],
    ];
    for (const [repo, guess] of cases)
      expect(() => openCheckpointStore({ ...base, repo, env: {} }), repo).toThrow(
        `--repo ${JSON.stringify(repo)} is neither a Hub repo id (user/name) nor a directory (file://path): ` +
          `did you mean \`--repo ${guess}\`?`,
      );
    expect(() => openCheckpointStore({ ...base, repo: 'no-slash', env: {} })).not.toThrow(/did you mean/);
  });

  it('refuses a Hub write without a token before any call, naming where it looked; a read needs none', () => {
    const home = useTempDir();
    const env = { HOME: home, HF_HOME: home };
    let err: unknown;
    try {
      openCheckpointStore({ ...base, repo: 'org/run', env });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HubAuthError);
    expect((err as HubAuthError).status).toBe(0);
    expect((err as Error).message).toMatch(
      /^--repo org\/run is a Hugging Face repo and no token was found; looked in /,
    );
    expect(openCheckpointStore({ ...base, needsWrite: false, repo: 'org/run', env })).toBeInstanceOf(HubStore);
  });

  it('refuses an endpoint the token must not travel to', () => {
    const env = { HF_TOKEN: 'hf_abcdef', HF_ENDPOINT: 'http://hub.example' };
    expect(() => openCheckpointStore({ ...base, repo: 'org/run', env })).toThrow(
      'HF_ENDPOINT "http://hub.example" is refused: the Hub token would travel in clear text',
    );
  });
});

describe('checkEndpoint', () => {
  it('takes https, and http only to a loopback address; never credentials in the URL', () => {
    for (const ok of ['https://huggingface.co', 'http://127.0.0.1:8080', 'http://localhost', 'http://[::1]:1'])
      expect(() => checkEndpoint(ok, 'hub.endpoint')).not.toThrow();
    expect(() => checkEndpoint('not a url', 'hub.endpoint')).toThrow('hub.endpoint "not a url" is not a URL');
    expect(() => checkEndpoint('https://u:p@hub.example', 'hub.endpoint')).toThrow(
      'hub.endpoint must not carry credentials in the URL',
    );
    expect(() => checkEndpoint('ftp://hub.example', 'hub.endpoint')).toThrow(/travel over ftp:/);
  });
});

describe('defaultStoreDir', () => {
  it("is the output folder's sibling, trailing slashes dropped", () => {
    expect(defaultStoreDir('/runs/out/')).toBe('/runs/out-ckpt');
    expect(defaultStoreDir('out')).toBe('out-ckpt');
  });
});
