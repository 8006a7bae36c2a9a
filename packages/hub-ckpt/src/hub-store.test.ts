import { createServer, type AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHubServer, useTempDir } from '@soup/test-utils';
import { writeCheckpoint } from '../bench/_fixtures';
import { ChecksumError, HubAuthError, StoreError, VerifyError } from './errors';
import { HubStore } from './hub-store';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { resolveResume } from './resolve-resume';
import { makeTestStore } from './_test-helpers';
import type { Pointer } from './types';

const RUN = 'run-h';

async function pointerStep(store: HubStore | { readFile: HubStore['readFile'] }): Promise<number | null> {
  const raw = await store.readFile({ path: 'latest.json' });
  return raw === null ? null : (JSON.parse(new TextDecoder().decode(raw)) as Pointer).step;
}

/** A port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Every string a caller could see from an error: message, stack, causes, inspect and JSON forms. */
function surfaces(err: unknown): string {
  const parts: string[] = [inspect(err, { depth: 10, showHidden: true })];
  let e: unknown = err;
  for (let i = 0; i < 10 && e; i++) {
    if (e instanceof Error) parts.push(e.message, e.stack ?? '', String(e));
    try {
      parts.push(JSON.stringify(e));
    } catch {
      /* cyclic */
    }
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join('\n');
}

describe('HubStore against the Hub-protocol server, through @huggingface/hub', () => {
  it('verifies LFS files by oid and small files by git blob id from the tree listing, downloading none', async () => {
    const t = await makeTestStore('hub');
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN, sizes: { modelBytes: 2_000_000 } });
    const res = await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
    expect(res.verify).toEqual({ checkedByOid: 4, checkedByDownload: 0 });
    const lfsDownloads = (t.server?.requests ?? []).filter(
      (r) => r.method === 'GET' && /resolve\/main\/.*\.safetensors$/.test(r.path),
    );
    expect(lfsDownloads).toEqual([]);
    expect(t.server?.requests.filter((r) => r.method === 'PUT')).toHaveLength(2);
    expect(t.server?.commitCount(t.location)).toBe(2);
  });

  it('pages through tree listings (Link rel="next")', async () => {
    const t = await makeTestStore('hub', { treePageSize: 2 });
    const ck = writeCheckpoint({ root: t.work, step: 1, run: RUN });
    await pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: RUN });
    const listed = await t.store.list({ prefix: 'ckpt/checkpoint-1' });
    expect(listed.map((e) => e.path)).toEqual([
      'ckpt/checkpoint-1/extra/rng_state.json',
      'ckpt/checkpoint-1/manifest.json',
      'ckpt/checkpoint-1/model.safetensors',
      'ckpt/checkpoint-1/optimizer.safetensors',
      'ckpt/checkpoint-1/trainer_state.json',
    ]);
    const pages = (t.server?.requests ?? []).filter(
      (r) => r.path.endsWith('/tree/main/ckpt/checkpoint-1') && r.status === 200,
    );
    expect(pages.length).toBeGreaterThan(2);
  });

  it('retries a 429 on commit honouring Retry-After, and 500s with backoff', async () => {
    const t = await makeTestStore('hub', {
      faults: { commit429: { count: 1, retryAfterS: 1 }, commit500: { count: 2 } },
    });
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    const t0 = performance.now();
    await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(950);
    expect(await pointerStep(t.store)).toBe(10);
    const commits = (t.server?.requests ?? []).filter((r) => r.path.includes('/commit/'));
    expect(commits.map((r) => r.status)).toEqual([429, 500, 500, 200, 200]);
    expect(t.logLines.some((l) => /answered 429 \(Retry-After 1\); retry 1\/5 in 1000 ms/.test(l))).toBe(true);
    expect(t.logLines.filter((l) => l.includes('answered 500'))).toHaveLength(2);
  });

  it('gives up after the retries with a StoreError carrying status and request id; the pointer stays', async () => {
    const t = await makeTestStore('hub', { hub: { retry: { retries: 2, baseDelayMs: 1 } } });
    const ck10 = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity });
    t.server?.setFaults({ commit500: { count: 100 } });
    const ck20 = writeCheckpoint({ root: t.work, step: 20, run: RUN });
    const err = await pushCheckpoint({ store: t.store, step: 20, dir: ck20.dir, run: RUN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).status).toBe(500);
    expect((err as StoreError).requestId).toMatch(/^req-\d+$/);
    t.server?.setFaults({});
    expect(await pointerStep(t.store)).toBe(10);
  });

  it('survives a dropped PUT and a 503 on the LFS batch (network errors are retried)', async () => {
    const t = await makeTestStore('hub', { faults: { dropPut: { count: 1 }, batch503: { count: 1 } } });
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN, sizes: { modelBytes: 1_000_000 } });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
    expect(await pointerStep(t.store)).toBe(10);
    const puts = (t.server?.requests ?? []).filter((r) => r.method === 'PUT');
    expect(puts.length).toBe(2); // the dropped one never got an answer
    expect(t.logLines.some((l) => /PUT .* failed/.test(l))).toBe(true);
    expect(t.logLines.some((l) => /batch answered 503/.test(l))).toBe(true);
  });

  it.each(['truncatePut', 'corruptPut'] as const)(
    'an upload whose bytes do not hash to the oid (%s) is refused by the server; the pointer does not move; a ' +
      'second push heals it',
    async (fault) => {
      const t = await makeTestStore('hub');
      const ck10 = writeCheckpoint({ root: t.work, step: 10, run: RUN });
      await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity });
      t.server?.setFaults({ [fault]: { count: 1 } });
      const ck20 = writeCheckpoint({ root: t.work, step: 20, run: RUN });
      const err = await pushCheckpoint({ store: t.store, step: 20, dir: ck20.dir, run: RUN }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).message).toMatch(/do not match the declared oid/);
      expect(await pointerStep(t.store)).toBe(10);
      expect(Object.keys(t.server?.files(t.location) ?? {}).some((p) => p.startsWith('ckpt/checkpoint-20/'))).toBe(
        false,
      );
      await pushCheckpoint({ store: t.store, step: 20, dir: ck20.dir, run: RUN });
      expect(await pointerStep(t.store)).toBe(20);
    },
  );

  it('wrong bytes stored: a small file fails verify by its listed git blob id, without a download', async () => {
    const t = await makeTestStore('hub');
    const ck10 = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    t.server?.setFaults({ wrongStored: { count: 1, pathIncludes: 'trainer_state.json' } });
    const before = t.server?.requests.length ?? 0;
    const err = await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(VerifyError);
    expect((err as VerifyError).message).toMatch(/trainer_state\.json has git blob id/);
    const downloads = (t.server?.requests ?? []).slice(before).filter((r) => /\/(resolve|raw)\//.test(r.path));
    // Only the manifest is read back: the checkpoint's other files are checked from the listing.
    expect(downloads.filter((r) => r.path.includes('checkpoint-10/') && !r.path.endsWith('/manifest.json'))).toEqual(
      [],
    );
    expect(await pointerStep(t.store)).toBeNull();
    await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity });
    expect(await pointerStep(t.store)).toBe(10);
  });

  // A small file is verified at push time from the listing (the server's git blob id of the bytes it holds), so
  // bytes altered only on the way back are the pull's to catch, by the manifest's sha256.
  it('wrong bytes served: a pull retries once, then refuses with ChecksumError', async () => {
    const t = await makeTestStore('hub');
    const ck10 = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity });

    t.server?.setFaults({ wrongBytes: { count: 1, pathIncludes: 'trainer_state.json' } });
    const small = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'ckpt/checkpoint-10',
      dir: join(t.work, 'p0'),
    });
    expect(small.fileCount).toBe(4);
    t.server?.setFaults({ wrongBytes: { count: 1, pathIncludes: 'model.safetensors' } });
    const ok = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'ckpt/checkpoint-10',
      dir: join(t.work, 'pull-1'),
    });
    expect(ok.fileCount).toBe(4);
    t.server?.setFaults({ wrongBytes: { count: 5, pathIncludes: 'model.safetensors' } });
    const err = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'ckpt/checkpoint-10',
      dir: join(t.work, 'pull-2'),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksumError);
    expect((err as ChecksumError).file).toBe('model.safetensors');
  });

  it('401 and 403 become a clear HubAuthError; no token at all is refused before any call', async () => {
    const t = await makeTestStore('hub');
    const ck = writeCheckpoint({ root: t.work, step: 1, run: RUN });
    t.server?.setFaults({ unauthorized: true });
    const e401 = await pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: RUN }).catch((e: unknown) => e);
    expect(e401).toBeInstanceOf(HubAuthError);
    expect((e401 as HubAuthError).status).toBe(401);
    expect((e401 as HubAuthError).message).toMatch(/answered 401.*HF_TOKEN/);
    t.server?.setFaults({ forbidden: true });
    const e403 = await pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: RUN }).catch((e: unknown) => e);
    expect(e403).toBeInstanceOf(HubAuthError);
    expect((e403 as HubAuthError).status).toBe(403);
    expect((e403 as HubAuthError).message).toContain('write access to soup-test/ckpt-run');
    t.server?.setFaults({});
    const before = t.server?.requests.length ?? 0;
    const anon = new HubStore({ repo: 'soup-test/x', endpoint: t.server?.url, env: {} });
    const e0 = await anon.create().catch((e: unknown) => e);
    expect(e0).toBeInstanceOf(HubAuthError);
    expect((e0 as HubAuthError).status).toBe(0);
    expect(t.server?.requests.length).toBe(before);
    const odd = new HubStore({ repo: 'soup-test/x', endpoint: t.server?.url, token: 'not-a-hub-token-123456' });
    await expect(odd.list({ prefix: '' })).rejects.toBeInstanceOf(HubAuthError);
  });

  it('never puts the token in an error, a log line, or the store inspect output', async () => {
    const server = await startHubServer({ dir: useTempDir() });
    const token = server.token;
    const lines: string[] = [];
    const logger = { warn: (l: string) => lines.push(l), info: (l: string) => lines.push(l) };
    const work = useTempDir();
    const ck = writeCheckpoint({ root: work, step: 1, run: RUN });
    const errors: unknown[] = [];
    const store = new HubStore({
      repo: 'soup-test/secret',
      endpoint: server.url,
      token,
      logger,
      retry: { retries: 1, baseDelayMs: 1 },
    });
    try {
      for (const faults of [
        { unauthorized: true },
        { forbidden: true },
        { commit500: { count: 10 } },
        { commit429: { count: 10, retryAfterS: 0 } },
      ]) {
        server.setFaults(faults);
        errors.push(await pushCheckpoint({ store, step: 1, dir: ck.dir, run: RUN, logger }).catch((e: unknown) => e));
      }
      server.setFaults({});
      // A wrong token that looks like a real one, and an endpoint that refuses connections.
      const wrong = `hf_${'z'.repeat(30)}`;
      errors.push(
        await new HubStore({ repo: 'soup-test/secret', endpoint: server.url, token: wrong, logger })
          .exists()
          .catch((e: unknown) => e),
      );
      const closedPort = await freePort();
      const dead = new HubStore({
        repo: 'soup-test/secret',
        endpoint: `http://127.0.0.1:${closedPort}`,
        token,
        logger,
        retry: { retries: 1, baseDelayMs: 1 },
      });
      errors.push(await dead.list({ prefix: '' }).catch((e: unknown) => e));
      // Token smuggled into the endpoint URL as credentials.
      const smuggled = new HubStore({
        repo: 'soup-test/secret',
        endpoint: `http://user:${token}@127.0.0.1:${closedPort}`,
        token,
        logger,
        retry: { retries: 0 },
      });
      errors.push(await smuggled.exists().catch((e: unknown) => e));
      expect(smuggled.description).not.toContain(token);
      expect((errors[5] as Error).message).toMatch(/ECONNREFUSED/);
      for (const e of errors) {
        expect(e).toBeInstanceOf(Error);
        const text = surfaces(e);
        expect(text).not.toContain(token);
        expect(text).not.toContain(wrong);
      }
      expect(errors.map((e) => (e as { code: string }).code)).toEqual([
        'SOUP_HUB_CKPT_AUTH',
        'SOUP_HUB_CKPT_AUTH',
        'SOUP_HUB_CKPT_STORE',
        'SOUP_HUB_CKPT_STORE',
        'SOUP_HUB_CKPT_AUTH',
        'SOUP_HUB_CKPT_STORE',
        'SOUP_HUB_CKPT_STORE',
      ]);
      expect(lines.length).toBeGreaterThan(3);
      for (const l of lines) expect(l).not.toContain(token);
      expect(inspect(store, { depth: 10, showHidden: true })).not.toContain(token);
      expect(JSON.stringify(store)).not.toContain(token);
    } finally {
      await server.close();
    }
  });

  it(
    'creates private repos by default, public on request, and handles dataset repos; ' +
      'HF_TOKEN/HF_ENDPOINT from env',
    async () => {
      const server = await startHubServer({ dir: useTempDir() });
      try {
        const env = { HF_TOKEN: server.token, HF_ENDPOINT: server.url };
        const work = useTempDir();
        const ck = writeCheckpoint({ root: work, step: 3, run: RUN });
        await pushCheckpoint({
          store: new HubStore({ repo: 'soup-test/priv', env }),
          step: 3,
          dir: ck.dir,
          run: RUN,
          keepLocal: Infinity,
        });
        await pushCheckpoint({
          store: new HubStore({ repo: 'soup-test/pub', env, private: false }),
          step: 3,
          dir: ck.dir,
          run: RUN,
          keepLocal: Infinity,
        });
        const ds = new HubStore({ repo: 'soup-test/ds', repoType: 'dataset', env });
        await pushCheckpoint({ store: ds, step: 3, dir: ck.dir, run: RUN, keepLocal: Infinity });
        expect(await resolveResume({ store: ds, run: RUN })).toMatchObject({ outcome: 'resume', step: 3 });
        expect(server.files('soup-test/ds', 'dataset')?.['latest.json']).toBeDefined();
        expect(server.files('soup-test/ds', 'model')).toBeUndefined();
        expect(server.requests.some((r) => r.path === '/datasets/soup-test/ds.git/info/lfs/objects/batch')).toBe(true);
        // Anonymous reads: the private repo is invisible, the public one readable.
        const anonPriv = new HubStore({ repo: 'soup-test/priv', endpoint: server.url, env: {} });
        await expect(anonPriv.exists()).rejects.toBeInstanceOf(HubAuthError);
        const anonPub = new HubStore({ repo: 'soup-test/pub', endpoint: server.url, env: {} });
        expect(await resolveResume({ store: anonPub, run: RUN })).toMatchObject({ outcome: 'resume', step: 3 });
      } finally {
        await server.close();
      }
    },
  );

  it('rejects a malformed repo id naming the field', () => {
    expect(() => new HubStore({ repo: 'no-namespace', env: {} })).toThrow(/repo "no-namespace" is not a Hub repo id/);
    expect(() => new HubStore({ repo: 'a/b', repoType: 'space' as 'model', env: {} })).toThrow(/repoType/);
  });
});
