import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DirStore } from './dir-store';
import { InvalidCheckpointOptionError } from './errors';
import { HubStore } from './hub-store';
import { openStore } from './open-store';

describe('openStore', () => {
  it('file:// gives a DirStore (absolute, percent-encoded, or relative to cwd)', () => {
    const abs = openStore({ repo: pathToFileURL('/tmp/my ckpts').href });
    expect(abs).toBeInstanceOf(DirStore);
    expect((abs as DirStore).root).toBe('/tmp/my ckpts');
    const rel = openStore({ repo: 'file://runs/a', cwd: '/work' });
    expect((rel as DirStore).root).toBe(join('/work', 'runs/a'));
  });

  it('anything else is a Hub repo, with token/endpoint from params or env', () => {
    const s = openStore({
      repo: 'org/run-1',
      repoType: 'dataset',
      env: { HF_ENDPOINT: 'https://hub.example/', HF_TOKEN: 'hf_abcdef' },
    });
    expect(s).toBeInstanceOf(HubStore);
    expect(s.description).toBe('hub dataset org/run-1 @ https://hub.example');
    expect((s as HubStore).hasToken).toBe(true);
    expect(openStore({ repo: 'org/run-1', env: {} }).description).toBe('hub model org/run-1 @ https://huggingface.co');
  });

  it('refuses an empty or malformed repo naming the field', () => {
    for (const repo of ['', 'file://', 'just-a-name', 'a/b/c']) {
      try {
        openStore({ repo, env: {} });
        throw new Error(`accepted ${repo}`);
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidCheckpointOptionError);
        expect((e as InvalidCheckpointOptionError).field).toBe('repo');
      }
    }
  });
});
