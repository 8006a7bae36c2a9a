// Protocol-level checks of the Hub test server with plain fetch (the hub-ckpt suite drives it
// through the real @huggingface/hub client).
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnUntil } from './child';
import { startHubServer, type HubServer } from './hub-server';
import { useTempDir } from './temp-dir';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function started(opts: Parameters<typeof startHubServer>[0] = {}): Promise<HubServer> {
  const s = await startHubServer({ dir: useTempDir('soup-hub-srv-'), ...opts });
  return s;
}

function api(s: HubServer, path: string, init: RequestInit = {}, token: string | null = s.token): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token !== null) headers.set('Authorization', `Bearer ${token}`);
  return fetch(`${s.url}${path}`, { ...init, headers });
}

async function create(s: HubServer, name: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return api(s, '/api/repos/create', {
    method: 'POST',
    body: JSON.stringify({ name, organization: 'org', type: 'model', ...extra }),
  });
}

async function commit(s: HubServer, repo: string, lines: unknown[]): Promise<Response> {
  const body = [{ key: 'header', value: { summary: 'test' } }, ...lines].map((l) => JSON.stringify(l)).join('\n');
  return api(s, `/api/models/${repo}/commit/main`, {
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/x-ndjson' },
  });
}

async function uploadLfs(s: HubServer, repo: string, content: Uint8Array): Promise<string> {
  const oid = sha(content);
  const batch = await api(s, `/${repo}.git/info/lfs/objects/batch`, {
    method: 'POST',
    body: JSON.stringify({
      operation: 'upload',
      transfers: ['basic'],
      hash_algo: 'sha_256',
      objects: [{ oid, size: content.length }],
    }),
  });
  const json = (await batch.json()) as {
    transfer: string;
    objects: Array<{ actions?: { upload?: { href: string } } }>;
  };
  expect(json.transfer).toBe('basic');
  const href = json.objects[0]?.actions?.upload?.href;
  if (href) expect((await fetch(href, { method: 'PUT', body: content })).status).toBe(200);
  return oid;
}

describe('startHubServer', () => {
  it('creates repos (409 when taken), hides private repos from anonymous callers, 401s a wrong token', async () => {
    const s = await started();
    try {
      expect((await create(s, 'a')).status).toBe(200);
      expect((await create(s, 'a')).status).toBe(409);
      expect((await api(s, '/api/models/org/a')).status).toBe(200);
      expect((await api(s, '/api/models/org/a', {}, null)).status).toBe(200);
      expect((await create(s, 'p', { visibility: 'private' })).status).toBe(200);
      expect((await api(s, '/api/models/org/p', {}, null)).status).toBe(401);
      const missing = await api(s, '/api/models/org/nope');
      expect(missing.status).toBe(404);
      expect(missing.headers.get('X-Error-Code')).toBe('RepoNotFound');
      expect((await api(s, '/api/models/org/a', {}, 'hf_wrong_token')).status).toBe(401);
      expect((await api(s, '/api/whoami-v2')).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('serves regular files with Range, ETag, HEAD and 416; EntryNotFound for missing files', async () => {
    const s = await started();
    try {
      await create(s, 'r');
      const text = 'hello hub, this is a regular file';
      expect(
        (
          await commit(s, 'org/r', [
            {
              key: 'file',
              value: { path: 'dir/a.txt', content: Buffer.from(text).toString('base64'), encoding: 'base64' },
            },
          ])
        ).status,
      ).toBe(200);
      const probe = await api(s, '/org/r/resolve/main/dir/a.txt', { headers: { Range: 'bytes=0-0' } });
      expect(probe.status).toBe(206);
      expect(probe.headers.get('Content-Range')).toBe(`bytes 0-0/${text.length}`);
      expect(probe.headers.get('ETag')).toMatch(/^"[0-9a-f]{40}"$/);
      expect(await probe.text()).toBe('h');
      expect(await (await api(s, '/org/r/resolve/main/dir/a.txt', { headers: { Range: 'bytes=6-8' } })).text()).toBe(
        'hub',
      );
      expect(await (await api(s, '/org/r/resolve/main/dir/a.txt', { headers: { Range: 'bytes=-4' } })).text()).toBe(
        'file',
      );
      expect(await (await api(s, '/org/r/resolve/main/dir/a.txt')).text()).toBe(text);
      expect((await api(s, '/org/r/resolve/main/dir/a.txt', { headers: { Range: 'bytes=999-' } })).status).toBe(416);
      const head = await api(s, '/org/r/resolve/main/dir/a.txt', { method: 'HEAD' });
      expect(head.headers.get('Content-Length')).toBe(String(text.length));
      const none = await api(s, '/org/r/resolve/main/dir/b.txt');
      expect([none.status, none.headers.get('X-Error-Code')]).toEqual([404, 'EntryNotFound']);
    } finally {
      await s.close();
    }
  });

  it(
    'does preupload, LFS batch + basic PUT, lfsFile commits, tree (with lfs oids, paging) and ' + 'paths-info',
    async () => {
      const s = await started({ treePageSize: 2 });
      try {
        await create(s, 'l');
        const pre = await api(s, '/api/models/org/l/preupload/main', {
          method: 'POST',
          body: JSON.stringify({
            files: [
              { path: 'w.safetensors', size: 10, sample: '' },
              { path: 'n.json', size: 2, sample: Buffer.from('{}').toString('base64') },
            ],
          }),
        });
        expect(((await pre.json()) as { files: Array<{ uploadMode: string }> }).files.map((f) => f.uploadMode)).toEqual(
          ['lfs', 'regular'],
        );
        const content = new Uint8Array(5000).map((_, i) => i % 251);
        const oid = await uploadLfs(s, 'org/l', content);
        // Uploaded already: the batch answers without an upload action.
        const again = await api(s, '/org/l.git/info/lfs/objects/batch', {
          method: 'POST',
          body: JSON.stringify({ operation: 'upload', objects: [{ oid, size: content.length }] }),
        });
        expect(((await again.json()) as { objects: Array<{ actions?: unknown }> }).objects[0]?.actions).toBeUndefined();
        const missingOid = 'e'.repeat(64);
        expect(
          (
            await commit(s, 'org/l', [
              { key: 'lfsFile', value: { path: 'ghost.bin', algo: 'sha256', oid: missingOid, size: 1 } },
            ])
          ).status,
        ).toBe(422);
        const files = ['a/1.bin', 'a/2.bin', 'a/b/3.bin'].map((path) => ({
          key: 'lfsFile',
          value: { path, algo: 'sha256', oid, size: content.length },
        }));
        expect((await commit(s, 'org/l', files)).status).toBe(200);
        // Follow the pages.
        const seen: Array<{ path: string; type: string; lfs?: { oid: string; size: number } }> = [];
        let next: string | undefined = `${s.url}/api/models/org/l/tree/main/a?recursive=true&expand=false`;
        let pages = 0;
        while (next) {
          const res = await fetch(next, { headers: { Authorization: `Bearer ${s.token}` } });
          seen.push(...((await res.json()) as typeof seen));
          next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('Link') ?? '')?.[1];
          pages++;
        }
        expect(pages).toBe(2);
        expect(seen.map((e) => `${e.type}:${e.path}`)).toEqual([
          'file:a/1.bin',
          'file:a/2.bin',
          'directory:a/b',
          'file:a/b/3.bin',
        ]);
        expect(seen[0]?.lfs).toMatchObject({ oid, size: content.length });
        const info = await api(s, '/api/models/org/l/paths-info/main', {
          method: 'POST',
          body: JSON.stringify({ paths: ['a/1.bin', 'nope', 'a/b'] }),
        });
        expect(
          ((await info.json()) as Array<{ path: string; type: string }>).map((e) => `${e.type}:${e.path}`),
        ).toEqual(['file:a/1.bin', 'directory:a/b']);
        expect(
          Buffer.from(await (await api(s, '/org/l/resolve/main/a/b/3.bin')).arrayBuffer()).equals(Buffer.from(content)),
        ).toBe(true);
        expect(await (await api(s, '/org/l/raw/main/a/b/3.bin')).text()).toContain(`oid sha256:${oid}`);
        expect((await api(s, '/api/models/org/l/tree/main/zzz')).status).toBe(404);
        // deletions: a missing file is an error, a folder goes at once
        expect((await commit(s, 'org/l', [{ key: 'deletedFile', value: { path: 'a/9.bin' } }])).status).toBe(404);
        expect((await commit(s, 'org/l', [{ key: 'deletedFolder', value: { path: 'a/b' } }])).status).toBe(200);
        expect(Object.keys(s.files('org/l') ?? {})).toEqual(['a/1.bin', 'a/2.bin']);
        expect(s.commitCount('org/l')).toBe(2);
      } finally {
        await s.close();
      }
    },
  );

  it(
    'fault switches: 429 with Retry-After, 500, dropped PUT, truncated PUT, wrong bytes, 401; set ' + 'over HTTP too',
    async () => {
      const s = await started({ faults: { commit429: { count: 1, retryAfterS: 7 }, commit500: { count: 1 } } });
      try {
        await create(s, 'f');
        const c1 = await commit(s, 'org/f', []);
        expect([c1.status, c1.headers.get('Retry-After')]).toEqual([429, '7']);
        expect((await commit(s, 'org/f', [])).status).toBe(500);
        expect((await commit(s, 'org/f', [])).status).toBe(200);
        expect(s.getFaults()).toMatchObject({ commit429: { count: 0 }, commit500: { count: 0 } });

        const content = new Uint8Array(200_000).fill(7);
        s.setFaults({ dropPut: { count: 1 } });
        await expect(uploadLfs(s, 'org/f', content)).rejects.toThrow();
        s.setFaults({ truncatePut: { count: 1 } });
        // refused: the bytes that arrived do not hash to the oid
        await expect(uploadLfs(s, 'org/f', content)).rejects.toThrow();
        const oid = sha(content);
        expect(
          (
            await commit(s, 'org/f', [
              { key: 'lfsFile', value: { path: 'w.bin', algo: 'sha256', oid, size: content.length } },
            ])
          ).status,
        ).toBe(422);
        await uploadLfs(s, 'org/f', content);
        expect(
          (
            await commit(s, 'org/f', [
              { key: 'lfsFile', value: { path: 'w.bin', algo: 'sha256', oid, size: content.length } },
            ])
          ).status,
        ).toBe(200);

        await commit(s, 'org/f', [{ key: 'file', value: { path: 'x.txt', content: 'abcdef', encoding: 'utf-8' } }]);
        const setOverHttp = await fetch(`${s.url}/__admin/faults`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${s.token}` },
          body: JSON.stringify({ wrongBytes: { count: 1 } }),
        });
        expect(setOverHttp.status).toBe(200);
        expect(await (await api(s, '/org/f/resolve/main/x.txt')).text()).not.toBe('abcdef');
        expect(await (await api(s, '/org/f/resolve/main/x.txt')).text()).toBe('abcdef');
        s.setFaults({ unauthorized: true });
        expect((await api(s, '/api/models/org/f')).status).toBe(401);
        expect(s.errors).toEqual([]);
      } finally {
        await s.close();
      }
    },
  );

  it(
    'refuses an LFS upload whose bytes do not hash to the declared oid or size, stores nothing, lists ' +
      'the declared size',
    async () => {
      const s = await started();
      try {
        await create(s, 'v');
        const content = new Uint8Array(50_000).fill(3);
        const oid = sha(content);
        const href = async (size: number): Promise<string> => {
          const batch = await api(s, '/org/v.git/info/lfs/objects/batch', {
            method: 'POST',
            body: JSON.stringify({ operation: 'upload', transfers: ['basic'], objects: [{ oid, size }] }),
          });
          return (
            ((await batch.json()) as { objects: Array<{ actions: { upload: { href: string } } }> }).objects[0]?.actions
              .upload.href ?? ''
          );
        };
        const corrupted = Buffer.from(content);
        corrupted[10] = 9;
        const bad = await fetch(await href(content.length), { method: 'PUT', body: corrupted });
        expect(bad.status).toBe(400);
        expect(await bad.text()).toMatch(/do not match the declared oid/);
        const short = await fetch(await href(content.length), { method: 'PUT', body: content.subarray(0, 49_999) });
        expect(short.status).toBe(400);
        // Nothing was stored: a commit naming the oid is refused as the real Hub refuses a missing LFS object.
        const line = { key: 'lfsFile', value: { path: 'w.bin', algo: 'sha256', oid, size: content.length } };
        expect((await commit(s, 'org/v', [line])).status).toBe(422);
        expect((await fetch(await href(content.length), { method: 'PUT', body: content })).status).toBe(200);
        expect((await commit(s, 'org/v', [line])).status).toBe(200);
        const tree = (await (await api(s, '/api/models/org/v/tree/main')).json()) as Array<{
          size: number;
          lfs: { oid: string; size: number };
        }>;
        expect(tree[0]).toMatchObject({ size: 50_000, lfs: { oid, size: 50_000 } });
        // Corruption at rest changes the served bytes, not the listing.
        s.corruptAtRest('org/v', 'w.bin');
        const served = Buffer.from(await (await api(s, '/org/v/resolve/main/w.bin')).arrayBuffer());
        expect(served.length).toBe(50_000);
        expect(sha(served)).not.toBe(oid);
        expect(s.errors).toEqual([]);
      } finally {
        await s.close();
      }
    },
  );

  it(
    'refuses a stale parentCommit with 412, and "applied, then the reply failed" applies the commit ' +
      'yet answers nothing',
    async () => {
      const s = await started();
      try {
        await create(s, 'c');
        const head = async (): Promise<string> =>
          ((await (await api(s, '/api/models/org/c')).json()) as { sha: string }).sha;
        const h0 = await head();
        const withParent = (parent: string, path: string): Promise<Response> => {
          const body = [
            { key: 'header', value: { summary: 'p', parentCommit: parent } },
            { key: 'file', value: { path, content: 'x', encoding: 'utf-8' } },
          ]
            .map((l) => JSON.stringify(l))
            .join('\n');
          return api(s, '/api/models/org/c/commit/main', {
            method: 'POST',
            body,
            headers: { 'Content-Type': 'application/x-ndjson' },
          });
        };
        s.setFaults({ commitLostReply: { count: 1 } });
        await expect(withParent(h0, 'a.txt')).rejects.toThrow(); // the connection dropped with no answer
        expect(Object.keys(s.files('org/c') ?? {})).toEqual(['a.txt']); // yet the commit is there
        expect(s.commitCount('org/c')).toBe(1);
        const replay = await withParent(h0, 'a.txt');
        expect(replay.status).toBe(412);
        s.setFaults({ commitLostReply: { count: 1, as: 500 } });
        expect((await withParent(await head(), 'b.txt')).status).toBe(500);
        expect(Object.keys(s.files('org/c') ?? {}).sort()).toEqual(['a.txt', 'b.txt']);
        expect(s.errors).toEqual([]);
      } finally {
        await s.close();
      }
    },
  );

  it('keeps repos across a restart on the same dir', async () => {
    const dir = useTempDir('soup-hub-srv-');
    const a = await startHubServer({ dir, token: 'hf_fixed_token_1' });
    await create(a, 'keep');
    await commit(a, 'org/keep', [{ key: 'file', value: { path: 'f.txt', content: 'persisted', encoding: 'utf-8' } }]);
    await a.close();
    const b = await startHubServer({ dir, token: 'hf_fixed_token_1' });
    try {
      expect(await (await api(b, '/org/keep/resolve/main/f.txt')).text()).toBe('persisted');
    } finally {
      await b.close();
    }
  });

  it('runs as its own process (hub-server-cli.ts)', async () => {
    const cli = fileURLToPath(new URL('./hub-server-cli.ts', import.meta.url));
    const { child, output } = await spawnUntil(
      process.execPath,
      ['--import', 'tsx', cli, '--dir', useTempDir('soup-hub-cli-')],
      /\}\n/,
      { timeoutMs: 30_000 },
    );
    const info = JSON.parse(output.trim().split('\n')[0] ?? '{}') as { url: string; token: string };
    const who = await fetch(`${info.url}/api/whoami-v2`, { headers: { Authorization: `Bearer ${info.token}` } });
    expect(((await who.json()) as { name: string }).name).toBe('soup-test');
    child.kill('SIGTERM');
  }, 30_000);
});
