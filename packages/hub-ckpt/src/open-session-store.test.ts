import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirStore } from './dir-store';
import { HubStore } from './hub-store';
import { openSessionStore } from './open-session-store';

describe('openSessionStore', () => {
  it('without a repo: a directory store beside the output folder (not inside it), named by its shown path', () => {
    const cwd = useTempDir();
    const output = join(cwd, 'out');
    const plain = openSessionStore({ repo: undefined, output, env: {}, cwd, warn: () => {} });
    expect(plain.store).toBeInstanceOf(DirStore);
    expect(plain.where).toBe(`${output}-ckpt`);
    expect(plain.storeName).toBe(`directory ${output}-ckpt`);
    const shown = openSessionStore({ repo: undefined, output, env: {}, cwd, warn: () => {}, show: () => 'out-ckpt' });
    expect(shown.storeName).toBe('directory out-ckpt');
  });

  it('a Hub repo is named by its description, for writing (a token is needed)', () => {
    const env = { HF_TOKEN: 'hf_test' };
    const hub = openSessionStore({ repo: 'me/run-ckpt', output: '/work/out', env, cwd: '/work', warn: () => {} });
    expect(hub.store).toBeInstanceOf(HubStore);
    expect(hub.where).toBe(hub.store.description);
    expect(hub.storeName).toBe(hub.store.description);
    expect(() =>
      openSessionStore({
        repo: 'me/run-ckpt',
        output: '/work/out',
        env: { HOME: '/nonexistent' },
        cwd: '/',
        warn: () => {},
      }),
    ).toThrow(/no token was found/);
  });
});
