import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startHubServer, useTempDir } from '@soup/test-utils';
import { writeCheckpoint } from '../bench/_fixtures';
import { HubStore } from './hub-store';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { streamBlobUploads } from './_stream-upload';

/** A server that records each request's headers and length, and answers with `status`. */
async function recorder(status: number): Promise<{ url: string; seen: Array<{ h: IncomingHttpHeaders; n: number }> }> {
  const seen: Array<{ h: IncomingHttpHeaders; n: number }> = [];
  const srv = createServer((req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      seen.push({ h: req.headers, n });
      res.writeHead(status, { ETag: '"e1"', 'X-Twice': 'a' });
      res.end(status === 204 ? undefined : `got ${n}`);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  onTestFinished(() => new Promise<void>((r) => srv.close(() => r())));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/part`, seen };
}

describe('streamBlobUploads', () => {
  it('sends a Blob body streamed with its Content-Length (no chunked encoding) and hands back the reply', async () => {
    const { url, seen } = await recorder(200);
    let inner = 0;
    const send = streamBlobUploads(async () => {
      inner++;
      return new Response('inner');
    });
    const blob = new Blob([new Uint8Array(3_000_000).fill(5)]);
    const res = await send(url, { method: 'PUT', body: blob, headers: { 'X-Request-Id': 'r1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('ETag')).toBe('"e1"');
    expect(res.url).toBe(url);
    expect(await res.text()).toBe('got 3000000');
    expect(seen[0]?.h['content-length']).toBe('3000000');
    expect(seen[0]?.h['transfer-encoding']).toBeUndefined();
    expect(seen[0]?.h['x-request-id']).toBe('r1');
    // The same init again sends every byte again (a retry).
    expect(await (await send(url, { method: 'PUT', body: blob })).text()).toBe('got 3000000');
    // Any other body goes to the wrapped fetch.
    expect(await (await send(url, { method: 'POST', body: '{}' })).text()).toBe('inner');
    expect(inner).toBe(1);
  });

  it('hands back a bodiless reply, and reports a refused connection as fetch does', async () => {
    const { url } = await recorder(204);
    const send = streamBlobUploads(fetch);
    const res = await send(url, { method: 'PUT', body: new Blob(['x']) });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    const err = await send('http://127.0.0.1:1/x', { method: 'PUT', body: new Blob(['x']) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe('fetch failed');
    expect((err as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
  });

  it('a push through the multipart transfer lands in chunk_size parts and pulls back intact', async () => {
    const work = useTempDir('soup-mp-');
    const server = await startHubServer({ dir: `${work}/hub`, lfsMultipartChunkBytes: 1024 * 1024 });
    onTestFinished(() => server.close());
    const store = new HubStore({ repo: 'soup-test/mp', endpoint: server.url, token: server.token });
    const ck = writeCheckpoint({ root: work, step: 10, run: 'run-mp', sizes: { modelBytes: 2_500_000 } });
    await pushCheckpoint({ store, step: 10, dir: ck.dir, run: 'run-mp' });
    const parts = server.requests.filter((r) => r.method === 'PUT' && r.path.startsWith('/__lfs-part/'));
    expect(parts.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(server.requests.filter((r) => r.path.startsWith('/__lfs-complete/')).map((r) => r.status)).toEqual([200]);
    const dir = `${work}/pulled/checkpoint-10`;
    const pulled = await pullCheckpoint({ store, pathInRepo: 'ckpt/checkpoint-10', dir });
    expect(pulled.manifest.files['model.safetensors']).toEqual({
      size: 2_500_000,
      sha256: ck.hashes['model.safetensors'],
    });
    expect(
      createHash('sha256')
        .update(readFileSync(`${dir}/model.safetensors`))
        .digest('hex'),
    ).toBe(ck.hashes['model.safetensors']);
    expect(server.errors).toEqual([]);
  });
});
