import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { UnsafeLinkError } from './errors';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-links';
const SECRET = 'top-secret-outside-the-folder';

/** Every byte the store serves, concatenated, for grepping. */
async function everything(store: Awaited<ReturnType<typeof makeTestStore>>['store']): Promise<string> {
  if (!(await store.exists())) return '';
  let all = '';
  for (const e of await store.list({ prefix: '' }))
    all += new TextDecoder().decode((await store.readFile({ path: e.path })) ?? new Uint8Array());
  return all;
}

describe.each(STORE_KINDS)('push never reads outside the pushed folder (%s store)', (kind) => {
  const cases: Array<[string, (dir: string, outside: string) => void, UnsafeLinkError['reason']]> = [
    ['a file link to /etc/passwd', (dir) => symlinkSync('/etc/passwd', join(dir, 'passwd_link')), 'outside'],
    ['a folder link to ../outside', (dir) => symlinkSync('../outside', join(dir, 'dirlink')), 'outside'],
    [
      'a file link to ../outside/secret.txt',
      (dir, outside) => symlinkSync(join(outside, 'secret.txt'), join(dir, 'leak.txt')),
      'outside',
    ],
    [
      'a link loop',
      (dir) => {
        symlinkSync('loop_b', join(dir, 'loop_a'));
        symlinkSync('loop_a', join(dir, 'loop_b'));
      },
      'loop',
    ],
    [
      'a folder link to its own parent folder (a walk loop)',
      (dir) => {
        mkdirSync(join(dir, 'sub'));
        symlinkSync('..', join(dir, 'sub', 'up'));
      },
      'loop',
    ],
    ['a dangling link', (dir) => symlinkSync('does-not-exist.bin', join(dir, 'gone.bin')), 'dangling'],
  ];
  for (const [what, plant, reason] of cases) {
    it(`refuses ${what}, naming the link and its target; nothing is uploaded`, async () => {
      const t = await makeTestStore(kind);
      const outside = join(t.work, 'outside');
      mkdirSync(outside, { recursive: true });
      writeFileSync(join(outside, 'secret.txt'), SECRET);
      const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
      plant(ck.dir, outside);
      const err = await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnsafeLinkError);
      const e = err as UnsafeLinkError;
      expect(e.code).toBe('SOUP_HUB_CKPT_UNSAFE_LINK');
      expect(e.reason).toBe(reason);
      expect(e.message).toContain(e.link);
      expect(e.message).toContain(e.target);
      expect(e.link.startsWith(ck.dir)).toBe(true);
      expect(t.commits()).toBe(0);
      const stored = await everything(t.store);
      expect(stored).not.toContain(SECRET);
      expect(stored).not.toContain('root:x:0:0');
      expect(stored).toBe('');
    });
  }

  it('a link that resolves inside the folder is uploaded as its content', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    symlinkSync('trainer_state.json', join(ck.dir, 'state_alias.json'));
    symlinkSync('extra', join(ck.dir, 'extra_alias'));
    const res = await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
    expect(res.fileCount).toBe(6);
    const alias = await t.store.readFile({ path: 'ckpt/checkpoint-10/state_alias.json' });
    expect(Buffer.from(alias ?? new Uint8Array()).equals(readFileSync(join(ck.dir, 'trainer_state.json')))).toBe(true);
    const nested = await t.store.readFile({ path: 'ckpt/checkpoint-10/extra_alias/rng_state.json' });
    expect(Buffer.from(nested ?? new Uint8Array()).equals(readFileSync(join(ck.dir, 'extra', 'rng_state.json')))).toBe(
      true,
    );
  });
});
