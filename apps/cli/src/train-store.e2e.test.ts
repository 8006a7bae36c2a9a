// soup train against the store holes of issue 14, through the real bin: the default store survives
// `rm -rf <output>`, a symlink planted in a directory store touches nothing outside it, and a lost
// reply to the pointer+prune commit is reconciled (exit 0).
import { startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { soupWithHub, storeTestConfig } from '../test/store-helpers';

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
  expect(server.errors).toEqual([]);
});

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(abs, e.name), r);
      else out[r] = readFileSync(join(abs, e.name)).toString('base64');
    }
  };
  walk(dir, '');
  return out;
}

describe('[slow] soup train: store integrity', { timeout: 300_000 }, () => {
  it(
    'the default store sits beside the output folder: rm -rf of the output keeps it, and the next ' + 'session resumes',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
      const common = ['train', '-c', 'soup.yaml', '--output-dir', 'soup-output', '--push-every-steps', '4'];
      const leg1 = await soupWithHub(server, [...common, '--stop-after-steps', '4'], cwd);
      expect(leg1.code, leg1.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(leg1.stdout).toContain('fresh run: store is at soup-output-ckpt and empty');
      expect(existsSync(join(cwd, 'soup-output-ckpt', 'latest.json'))).toBe(true);
      rmSync(join(cwd, 'soup-output'), { recursive: true, force: true });
      const leg2 = await soupWithHub(server, [...common, '--stop-after-steps', '4'], cwd);
      expect(leg2.code, leg2.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(leg2.stdout).toContain('resuming from ckpt/checkpoint-4 at step 4');
      expect(leg2.stdout).not.toContain('fresh run');
    },
  );

  it(
    'a symlink planted in a directory store: the resume is refused and the victim outside the store ' +
      'is untouched, byte for byte',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
      const common = [
        'train',
        '-c',
        'soup.yaml',
        '--output-dir',
        'out',
        '--repo',
        'file://store',
        '--push-every-steps',
        '4',
      ];
      // leg 1 to step 4 (the step 10, scaled to this 12-step run)
      const leg1 = await soupWithHub(server, [...common, '--stop-after-steps', '4'], cwd);
      expect(leg1.code, leg1.stderr).toBe(EXIT_CODES.segmentSaved);
      const victim = join(cwd, 'victim');
      mkdirSync(join(victim, 'sub'), { recursive: true });
      writeFileSync(join(victim, 'model.safetensors'), 'precious');
      writeFileSync(join(victim, 'trainer_state.json'), '{"mine":true}');
      writeFileSync(join(victim, 'sub', 'notes.txt'), 'keep me');
      const before = snapshot(victim);
      symlinkSync(victim, join(cwd, 'store', 'ckpt', 'checkpoint-6'));
      // resume with --stop-after-steps 2: it would push checkpoint-6 through the link
      const leg2 = await soupWithHub(server, [...common, '--stop-after-steps', '2'], cwd);
      expect(leg2.code).toBe(EXIT_CODES.integrity);
      expect(leg2.stderr).toMatch(
        /store\/ckpt\/checkpoint-6 is a symbolic link inside a directory store; refusing to follow it/,
      );
      expect(snapshot(victim)).toEqual(before);
      expect(JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8'))).toMatchObject({ step: 4 });
      const status = await soupWithHub(server, ['ckpt', 'status', '--repo', 'file://store'], cwd);
      expect(status.code).toBe(EXIT_CODES.integrity); // status refuses too, rather than claiming step 6 verified
      expect(snapshot(victim)).toEqual(before);
    },
  );

  it(
    'the pointer+prune commit lands but its reply is lost: the replay is reconciled and soup train ' +
      'exits 75 (segment saved)',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig('hub:\n  keep_remote: 2\n'));
      const repo = 'int/lost-reply';
      // Commits: the store lease, data 2, pointer 2, data 4, pointer 4, data 6, pointer 6 + prune checkpoint-2 (the
      // 7th).
      server.setFaults({ commitLostReply: { count: 1, skip: 6 } });
      const r = await soupWithHub(
        server,
        [
          'train',
          '-c',
          'soup.yaml',
          '--output-dir',
          'out',
          '--repo',
          repo,
          '--push-every-steps',
          '2',
          '--stop-after-steps',
          '6',
        ],
        cwd,
      );
      const left = server.getFaults().commitLostReply;
      server.setFaults({});
      expect(left?.count).toBe(0); // the fault fired
      expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
      const files = Object.keys(server.files(repo) ?? {});
      expect(files.some((f) => f.startsWith('ckpt/checkpoint-2/'))).toBe(false);
      expect(files.some((f) => f.startsWith('ckpt/checkpoint-6/'))).toBe(true);
      expect(server.requests.some((q) => q.path.endsWith(`${repo}/commit/main`) && q.status === 412)).toBe(true);
    },
  );
});
