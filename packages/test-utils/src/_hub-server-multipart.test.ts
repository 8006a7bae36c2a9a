// The multipart LFS transfer of the Hub test server, with plain fetch: what it accepts and what it refuses
// as the Hub's storage does.
import { createHash } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startHubServer, type HubServer } from './hub-server';
import { useTempDir } from './temp-dir';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const CHUNK = 1000;

async function started(): Promise<HubServer> {
  const s = await startHubServer({ dir: useTempDir('soup-hub-mp-'), lfsMultipartChunkBytes: CHUNK });
  onTestFinished(() => s.close());
  const auth = { Authorization: `Bearer ${s.token}` };
  const made = await fetch(`${s.url}/api/repos/create`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ name: 'm', organization: 'org', type: 'model' }),
  });
  expect(made.status).toBe(200);
  return s;
}

interface Upload {
  href?: string;
  header?: Record<string, string>;
}

async function batch(s: HubServer, oid: string, size: number, transfers: string[]): Promise<Upload | undefined> {
  const res = await fetch(`${s.url}/org/m.git/info/lfs/objects/batch`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${s.token}` },
    body: JSON.stringify({ operation: 'upload', transfers, hash_algo: 'sha_256', objects: [{ oid, size }] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { objects: Array<{ actions?: { upload?: Upload } }> }).objects[0]?.actions?.upload;
}

function partUrls(upload: Upload | undefined): string[] {
  const header = upload?.header ?? {};
  return Object.keys(header)
    .filter((k) => /^\d+$/.test(k))
    .sort()
    .map((k) => header[k] as string);
}

async function putParts(urls: string[], content: Uint8Array): Promise<string[]> {
  const etags: string[] = [];
  for (const [i, url] of urls.entries()) {
    const res = await fetch(url, { method: 'PUT', body: content.subarray(i * CHUNK, (i + 1) * CHUNK) });
    expect(res.status).toBe(200);
    etags.push(res.headers.get('ETag') ?? '');
  }
  return etags;
}

function complete(upload: Upload | undefined, oid: string, etags: string[]): Promise<Response> {
  return fetch(upload?.href ?? '', {
    method: 'POST',
    body: JSON.stringify({ oid, parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })) }),
  });
}

async function commitLfs(s: HubServer, oid: string, size: number): Promise<number> {
  const lines = [
    { key: 'header', value: { summary: 'mp' } },
    { key: 'lfsFile', value: { path: 'big.bin', algo: 'sha256', oid, size } },
  ];
  const res = await fetch(`${s.url}/api/models/org/m/commit/main`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${s.token}`, 'Content-Type': 'application/x-ndjson' },
    body: lines.map((l) => JSON.stringify(l)).join('\n'),
  });
  await res.body?.cancel();
  return res.status;
}

const content = Uint8Array.from({ length: 2500 }, (_, i) => (i * 31) % 251);
const oid = sha(content);

describe('the multipart LFS transfer', () => {
  it('hands out chunk_size parts to a client that offers it, joins them and stores the object', async () => {
    const s = await started();
    expect((await batch(s, oid, content.length, ['basic']))?.header).toBeUndefined();
    const upload = await batch(s, oid, content.length, ['basic', 'multipart']);
    expect(upload?.header?.chunk_size).toBe(String(CHUNK));
    const urls = partUrls(upload);
    expect(urls).toHaveLength(3);
    const res = await complete(upload, oid, await putParts(urls, content));
    expect(res.status).toBe(200);
    expect(await commitLfs(s, oid, content.length)).toBe(200);
    const served = await fetch(`${s.url}/org/m/resolve/main/big.bin`, {
      headers: { Authorization: `Bearer ${s.token}` },
    });
    expect(sha(new Uint8Array(await served.arrayBuffer()))).toBe(oid);
    // An object already stored needs no upload.
    expect(await batch(s, oid, content.length, ['basic', 'multipart'])).toBeUndefined();
    expect(s.errors).toEqual([]);
  });

  it('refuses a part of the wrong size, for any part but the last and for the last', async () => {
    const s = await started();
    const urls = partUrls(await batch(s, oid, content.length, ['basic', 'multipart']));
    const short = await fetch(urls[0] ?? '', { method: 'PUT', body: content.subarray(0, CHUNK - 1) });
    expect(short.status).toBe(400);
    expect(await short.text()).toMatch(/part 1 of .* has 999 bytes; this transfer's parts need 1000/);
    const long = await fetch(urls[2] ?? '', { method: 'PUT', body: content.subarray(2 * CHUNK - 1) });
    expect(long.status).toBe(400);
    expect(await long.text()).toMatch(/part 3 of .* has 501 bytes; this transfer's parts need 500/);
    expect(s.errors).toEqual([]);
  });

  it('refuses a completion with a missing part or a wrong ETag, and parts that do not hash to the oid', async () => {
    const s = await started();
    const upload = await batch(s, oid, content.length, ['basic', 'multipart']);
    const etags = await putParts(partUrls(upload), content);
    const missing = await complete(upload, oid, etags.slice(0, 2));
    expect(missing.status).toBe(400);
    expect(await missing.text()).toMatch(/must name parts 1\.\.3 in order, got \[1,2\]/);
    const wrongEtag = await complete(upload, oid, [etags[0] ?? '', '"0"', etags[2] ?? '']);
    expect(wrongEtag.status).toBe(400);
    expect(await wrongEtag.text()).toMatch(/part 2 of [0-9a-f]+: no part with ETag/);

    const corrupted = Uint8Array.from(content);
    corrupted[1500] = (corrupted[1500] ?? 0) ^ 0xff;
    const again = await batch(s, oid, content.length, ['basic', 'multipart']);
    const bad = await complete(again, oid, await putParts(partUrls(again), corrupted));
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/do not match the declared oid/);
    // Nothing was stored: a commit naming the oid is refused as for a missing LFS object.
    expect(await commitLfs(s, oid, content.length)).toBe(422);
    expect(s.errors).toEqual([]);
  });
});
