// Issue 20 through the real bin: symlinks never leak, the token never appears, one writer per store,
// a Hub outage does not end soup train, a full disk says so, and storage stays bounded with squash.
import { acquireLease, DirStore, HubStore } from '@soup/hub-ckpt';
import { runNode, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { nodeTrainerArgv, SOUP_BIN, soupRunUntil, writeFakeCheckpoint } from '../test/run-helpers';
import { soupWithHub, storeTestConfig } from '../test/store-helpers';

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
  expect(server.errors).toEqual([]);
});

/** Every file under `dir` with its bytes. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(abs, e.name), r);
      else if (e.isFile()) out[r] = readFileSync(join(abs, e.name)).toString('base64');
    }
  };
  walk(dir, '');
  return out;
}

/** Every file of a Hub test repo with its bytes. */
async function hubSnapshot(repo: string, prefix: string): Promise<Record<string, string>> {
  const store = new HubStore({ repo, endpoint: server.url, token: server.token });
  const out: Record<string, string> = {};
  for (const e of await store.list({ prefix }))
    out[e.path] = Buffer.from((await store.readFile({ path: e.path })) ?? new Uint8Array()).toString('base64');
  return out;
}

describe('[slow] store safety through the bin', { timeout: 300_000 }, () => {
  it.each(['dir', 'hub'])(
    'soup ckpt push refuses a link to /etc/passwd, a loop and a dangling link (exit 2, naming link and target); ' +
      'nothing is uploaded (%s)',
    async (kind) => {
      const cwd = useTempDir();
      const cases: Array<[string, (dir: string) => void]> = [
        ['passwd_link', (dir) => symlinkSync('/etc/passwd', join(dir, 'passwd_link'))],
        [
          'loop_a',
          (dir) => {
            symlinkSync('loop_b', join(dir, 'loop_a'));
            symlinkSync('loop_a', join(dir, 'loop_b'));
          },
        ],
        ['gone.bin', (dir) => symlinkSync('nowhere.bin', join(dir, 'gone.bin'))],
      ];
      let i = 0;
      for (const [link, plant] of cases) {
        i++;
        const dir = writeFakeCheckpoint(cwd, 10, { root: `out${i}` });
        plant(dir);
        const repo = kind === 'dir' ? `file://store${i}` : `leak/links-${i}`;
        const r = await soupWithHub(
          server,
          ['ckpt', 'push', `out${i}/checkpoint-10`, '--step', '10', '--run', 'r', '--repo', repo],
          cwd,
        );
        expect(r.code, r.stderr).toBe(EXIT_CODES.usage);
        expect(r.stderr).toContain(`${link} -> `);
        expect(r.stdout + r.stderr).not.toContain('root:x:0:0');
        if (kind === 'dir') {
          const files = (() => {
            try {
              return Object.keys(snapshot(join(cwd, `store${i}`)));
            } catch {
              return [];
            }
          })();
          expect(files.filter((f) => !f.startsWith('.soup-'))).toEqual([]);
        } else expect(Object.keys(server.files(repo) ?? {})).toEqual([]);
      }
    },
  );

  it('soup run: a token in the trainer argv appears in no output and no file written to the store', async () => {
    const cwd = useTempDir();
    const token = `hf_${'Q7wErTy8uI'.repeat(4)}`;
    const argv = nodeTrainerArgv({ maxSteps: 4, saveSteps: 2, extra: ['--hub_token', token, `--push_token=${token}`] });
    const r = await runNode(
      [
        SOUP_BIN,
        'run',
        '--repo',
        'file://store',
        '--output-dir',
        'out',
        '--batch-size',
        '4',
        '--settle',
        '300ms',
        '--poll',
        '100ms',
        '--',
        ...argv,
      ],
      {
        cwd,
        timeoutMs: 180_000,
        env: {
          PATH: process.env.PATH,
          HOME: cwd,
          NO_COLOR: '1',
          SOUP_DEBUG: '1',
          SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
        },
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('launched trainer');
    expect(r.stdout).toContain('--hub_token hf_***');
    const written = Object.values(snapshot(join(cwd, 'store'))).map((b) => Buffer.from(b, 'base64').toString('latin1'));
    for (const text of [r.stdout, r.stderr, ...written]) expect(text).not.toContain(token);
    const record = JSON.parse(readFileSync(join(cwd, 'store', 'soup_run.json'), 'utf8')) as {
      identity: { argv: string[] };
    };
    expect(record.identity.argv).toContain(
      `sha256:${(await import('node:crypto')).createHash('sha256').update(token).digest('hex')}`,
    );
    // A later run with another token is refused without quoting either token.
    const other = `hf_${'Zx9'.repeat(12)}`;
    const argv2 = nodeTrainerArgv({
      maxSteps: 6,
      saveSteps: 2,
      extra: ['--hub_token', other, `--push_token=${other}`],
    });
    const r2 = await runNode(
      [SOUP_BIN, 'run', '--repo', 'file://store', '--output-dir', 'out2', '--batch-size', '4', '--', ...argv2],
      { cwd, timeoutMs: 60_000, env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_DEBUG: '1' } },
    );
    expect(r2.code).toBe(EXIT_CODES.resume);
    for (const t of [token, other]) expect(r2.stdout + r2.stderr).not.toContain(t);
  });

  for (const kind of ['dir', 'hub'] as const) {
    for (const command of ['train', 'run'] as const) {
      it(
        `a second writer (soup ${command}) is refused before it trains (exit 11, naming the holder); ` +
          `the first's checkpoint is byte-identical (${kind})`,
        async () => {
          const cwd = useTempDir();
          writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
          const repo = kind === 'dir' ? 'file://store' : `race/${command}-${Math.random().toString(36).slice(2, 8)}`;
          // Writer A: a first session pushes checkpoint-4, then (still running, as far as the store knows) holds the
          // lease.
          const a = await soupWithHub(
            server,
            [
              'train',
              '-c',
              'soup.yaml',
              '--output-dir',
              'out-a',
              '--repo',
              repo,
              '--push-every-steps',
              '4',
              '--stop-after-steps',
              '4',
            ],
            cwd,
          );
          expect(a.code, a.stderr).toBe(EXIT_CODES.segmentSaved);
          const store =
            kind === 'dir'
              ? new DirStore({ root: join(cwd, 'store') })
              : new HubStore({ repo, endpoint: server.url, token: server.token });
          const lease = await acquireLease({ store, run: 'writer-a', ttlMs: 600_000, autoRenew: false });
          const before = kind === 'dir' ? snapshot(join(cwd, 'store', 'ckpt')) : await hubSnapshot(repo, 'ckpt');
          expect(Object.keys(before).length).toBeGreaterThan(0);
          const b =
            command === 'train'
              ? await soupWithHub(
                  server,
                  ['train', '-c', 'soup.yaml', '--output-dir', 'out-b', '--repo', repo, '--push-every-steps', '4'],
                  cwd,
                )
              : await soupWithHub(
                  server,
                  [
                    'run',
                    '--repo',
                    repo,
                    '--output-dir',
                    'out-b',
                    '--batch-size',
                    '4',
                    '--',
                    ...nodeTrainerArgv({ maxSteps: 4, saveSteps: 2 }),
                  ],
                  cwd,
                );
          expect(b.code, b.stderr).toBe(EXIT_CODES.storeBusy);
          expect(b.stderr).toContain(`pid ${process.pid}`);
          expect(b.stderr).toContain(`since ${lease.info.since}`);
          expect(b.stderr).toContain('run "writer-a"');
          expect(b.stdout).not.toMatch(/launched trainer|training steps/);
          const after = kind === 'dir' ? snapshot(join(cwd, 'store', 'ckpt')) : await hubSnapshot(repo, 'ckpt');
          expect(after).toEqual(before);
          await lease.release();
        },
      );
    }
  }

  it(
    'the same soup run command started twice: the second is refused (11) while the first trains; the ' +
      'first ends normally with a verified store',
    async () => {
      const cwd = useTempDir();
      const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
      const opts = [
        '--repo',
        'file://store',
        '--output-dir',
        'out',
        '--batch-size',
        '4',
        '--settle',
        '300ms',
        '--poll',
        '100ms',
      ];
      const argv = nodeTrainerArgv({ maxSteps: 400, saveSteps: 2 });
      const a = await soupRunUntil(cwd, opts, argv, env, /pushed ckpt\/checkpoint-\d+/);
      const b = await runNode([SOUP_BIN, 'run', ...opts, '--', ...argv], { cwd, env, timeoutMs: 60_000 });
      expect(b.code, b.stderr).toBe(EXIT_CODES.storeBusy);
      expect(b.stderr).toContain(`pid ${a.child.pid}`);
      expect(b.stdout).not.toContain('launched trainer');
      a.child.kill('SIGTERM');
      const endA = await a.exited;
      expect(endA.code, endA.stderr).toBe(EXIT_CODES.segmentSaved);
      const status = JSON.parse(
        (await soupWithHub(server, ['ckpt', 'status', '--repo', 'file://store', '--json'], cwd)).stdout,
      ) as { pointed_verified: boolean };
      expect(status.pointed_verified).toBe(true);
      expect(readdirSync(join(cwd, 'store'))).not.toContain('soup-lease.json'); // released at the end
    },
  );

  it(
    'two soup train runs with different seeds started together on one directory store: one trains, ' +
      'the other is refused (11) or finds another run (6); the store stays verified',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'a.yaml'), storeTestConfig('  seed: 1\n'));
      writeFileSync(join(cwd, 'b.yaml'), storeTestConfig('  seed: 2\n'));
      const common = ['--repo', 'file://store', '--push-every-steps', '4'];
      const [a, b] = await Promise.all([
        soupWithHub(server, ['train', '-c', 'a.yaml', '--output-dir', 'out-a', ...common], cwd),
        soupWithHub(server, ['train', '-c', 'b.yaml', '--output-dir', 'out-b', ...common], cwd),
      ]);
      const codes = [a.code, b.code].sort((x, y) => (x ?? 99) - (y ?? 99));
      expect(
        [
          [0, EXIT_CODES.storeBusy],
          [0, EXIT_CODES.resume],
        ],
        `${a.stderr}\n${b.stderr}`,
      ).toContainEqual(codes);
      const winner = a.code === 0 ? 'a.yaml' : 'b.yaml';
      const status = JSON.parse(
        (await soupWithHub(server, ['ckpt', 'status', '--repo', 'file://store', '--json'], cwd)).stdout,
      ) as { pointed_verified: boolean; pointer: { terminal: boolean } };
      expect(status).toMatchObject({ pointed_verified: true, pointer: { terminal: true } });
      // The winner's next session finds its run complete.
      const again = await soupWithHub(server, ['train', '-c', winner, '--output-dir', `again`, ...common], cwd);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/run soup-\S+ is complete: .* final\/ holds step \d+; nothing to launch/);
    },
  );

  it(
    'soup ckpt status shows the stored bytes, history included, and says when pruned bytes are only ' +
      'in older commits',
    async () => {
      const cwd = useTempDir();
      const repo = 'storage/status';
      for (const step of [10, 20, 30, 40]) {
        writeFakeCheckpoint(cwd, step, { modelBytes: 40_000 });
        const p = await soupWithHub(
          server,
          [
            'ckpt',
            'push',
            `out/checkpoint-${step}`,
            '--step',
            String(step),
            '--run',
            'r',
            '--repo',
            repo,
            '--keep-remote',
            '2',
          ],
          cwd,
        );
        expect(p.code, p.stderr).toBe(0);
      }
      const json = JSON.parse(
        (await soupWithHub(server, ['ckpt', 'status', '--repo', repo, '--json'], cwd)).stdout,
      ) as {
        stored_bytes: number;
        tree_bytes: number;
      };
      expect(json.stored_bytes).toBe(server.storageBytes(repo));
      expect(json.stored_bytes).toBeGreaterThan(2 * json.tree_bytes);
      const human = await soupWithHub(server, ['ckpt', 'status', '--repo', repo], cwd);
      expect(human.stdout).toMatch(
        /storage +\S+ \S+ stored \(history included\), .* is only in older commits: pass --squash-history/,
      );
    },
  );

  it('soup train outlives a 30 s Hub outage: the failed push is retried at the next boundary, exit 0', async () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
    const repo = 'outage/train';
    // Commits: lease, data 2, pointer 2; then 30 s with every Hub call failing (503). A push at every boundary
    // (no interval) and no history check after it (no auto squash, whose retried request would sit out the outage),
    // so the boundaries during the outage fail and a later one retries.
    server.setFaults({ outageAfter: { afterCommits: 3, durationMs: 30_000 } });
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
        '--min-commit-interval',
        '0',
        '--squash-history',
        'off',
      ],
      cwd,
      {},
      240_000,
    );
    const outageFired = server.getFaults().outageAfter === undefined;
    server.setFaults({});
    expect(outageFired).toBe(true);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/could not push checkpoint-\d+ .*training goes on/);
    expect(r.stdout).toContain('pushed final/');
    const raw = await new HubStore({ repo, endpoint: server.url, token: server.token }).readFile({
      path: 'latest.json',
    });
    const ptr = JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array())) as { terminal: boolean; step: number };
    expect(ptr).toMatchObject({ terminal: true, step: 12 });
  });

  it('soup train whose store goes down for good after its first push: says what is where, exit 75', async () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
    const repo = 'outage/train-unpushed';
    // Commits: lease, data 4, pointer 4; then every Hub call fails (503) past the session's end, with no retry. The
    // pushes of 8 and final/ fail: the store holds step 4 of this session, so the same command continues from it.
    server.setFaults({ outageAfter: { afterCommits: 3, durationMs: 600_000 } });
    const args = ['train', '-c', 'soup.yaml', '--output-dir', 'out', '--repo', repo, '--push-every-steps', '4'];
    const r = await soupWithHub(
      server,
      [...args, '--min-commit-interval', '0', '--squash-history', 'off', '--json'],
      cwd,
      { SOUP_HUB_RETRIES: '0' },
      240_000,
    );
    server.setFaults({});
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r.stderr).toMatch(
      /^soup: could not push final\/ to hub model outage\/train-unpushed @ \S+: .*\. Not pushed this session: steps 8, 12 /m,
    );
    expect(r.stderr).toContain(
      '(the newest is kept locally in out/final). The store holds step 4 from this session: run the same command ' +
        'again to continue from it (exit 75).',
    );
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      outcome: 'not-pushed',
      not_pushed_steps: [8, 12],
      stored_step: 4,
      local_dir: 'out/final',
      exit_code: EXIT_CODES.segmentSaved,
    });
    const raw = await new HubStore({ repo, endpoint: server.url, token: server.token }).readFile({
      path: 'latest.json',
    });
    expect(JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array()))).toMatchObject({ step: 4, terminal: false });
  });

  it(
    'a full local disk while saving: its own message (path, bytes needed) and exit 12; the store is ' + 'untouched',
    async (t) => {
      if (process.getuid?.() !== 0) {
        console.log('skipped: mounting a tmpfs needs root');
        t.skip();
        return;
      }
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), storeTestConfig());
      const small = join(cwd, 'small');
      mkdirSync(small);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', small]);
      try {
        const r = await soupWithHub(
          server,
          [
            'train',
            '-c',
            'soup.yaml',
            '--output-dir',
            'small/out',
            '--repo',
            'file://store',
            '--push-every-steps',
            '4',
          ],
          cwd,
        );
        expect(r.code, r.stderr).toBe(EXIT_CODES.diskFull);
        expect(r.stderr).toMatch(
          /the disk holding .*small\/out\/checkpoints\/checkpoint-4 is full \(saving .*, which needs \d+ bytes\)/,
        );
        const files = Object.keys(snapshot(join(cwd, 'store')));
        expect(files.filter((f) => f.startsWith('ckpt/') || f === 'latest.json')).toEqual([]);
      } finally {
        execFileSync('umount', [small]);
      }
    },
  );
});
