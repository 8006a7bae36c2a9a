// The Hub's multipart LFS transfer on the local Hub-protocol test server: the batch API hands out one
// storage URL per part (`header["00001"]`…, with `chunk_size`) and a completion URL (`href`); every part but
// the last must be exactly chunk_size bytes and the last the rest, as the storage refuses otherwise; the
// completion names each part's ETag, and the object is kept only when the joined parts hash to the declared
// oid and size.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HubServerContext } from './_hub-server-context';
import { readBody, send, sendError } from './_hub-server-http';

/** The upload action of the multipart transfer for an object of `size` bytes in parts of `chunk`. */
export function multipartAction(
  base: string,
  oid: string,
  size: number,
  chunk: number,
): { href: string; header: Record<string, string> } {
  const header: Record<string, string> = { chunk_size: String(chunk) };
  const count = Math.ceil(size / chunk);
  for (let n = 1; n <= count; n++) header[String(n).padStart(5, '0')] = `${base}/__lfs-part/${oid}/${n}?size=${size}`;
  return { href: `${base}/__lfs-complete/${oid}?size=${size}`, header };
}

function declaredSize(req: IncomingMessage): number {
  return Number(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('size'));
}

/** `PUT /__lfs-part/{oid}/{n}?size=N`: one part, refused unless it has the length the transfer set. */
export async function handlePartPut(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  oid: string,
  partRaw: string,
): Promise<void> {
  const size = declaredSize(req);
  const chunk = ctx.multipartChunkBytes;
  const part = Number(partRaw);
  const count = chunk === undefined ? 0 : Math.ceil(size / chunk);
  if (chunk === undefined || !/^[0-9a-f]{64}$/.test(oid) || !Number.isInteger(part) || part < 1 || part > count) {
    await readBody(req);
    return sendError(res, 400, `no such part: ${partRaw} of ${oid}`);
  }
  const want = part < count ? chunk : size - chunk * (count - 1);
  const md5 = createHash('md5');
  let got = 0;
  const counter = new Transform({
    transform(c: Buffer, _enc, cb) {
      got += c.length;
      md5.update(c);
      cb(null, c);
    },
  });
  const file = ctx.state.partPath(oid, part);
  try {
    await pipeline(req, counter, createWriteStream(file));
  } catch {
    rmSync(file, { force: true });
    return;
  }
  if (got !== want) {
    rmSync(file, { force: true });
    return sendError(res, 400, `part ${part} of ${oid} has ${got} bytes; this transfer's parts need ${want}`);
  }
  const etag = `"${md5.digest('hex')}"`;
  ctx.partEtags.set(`${oid}:${part}`, etag);
  send(res, 200, '', { ETag: etag });
}

/** `POST /__lfs-complete/{oid}?size=N`: joins the parts named with their ETags; keeps the object if it checks. */
export async function handleComplete(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  oid: string,
): Promise<void> {
  const size = declaredSize(req);
  const chunk = ctx.multipartChunkBytes ?? 1;
  const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
    oid?: string;
    parts?: Array<{ partNumber: number; etag: string }>;
  };
  const count = Math.ceil(size / chunk);
  const parts = body.parts ?? [];
  const named = parts.map((p) => p.partNumber).join(',');
  const all = Array.from({ length: count }, (_, i) => i + 1).join(',');
  if (body.oid !== oid || named !== all)
    return sendError(res, 400, `the completion of ${oid} must name parts 1..${count} in order, got [${named}]`);
  const wrong = parts.find((p) => ctx.partEtags.get(`${oid}:${p.partNumber}`) !== p.etag);
  if (wrong) return sendError(res, 400, `part ${wrong.partNumber} of ${oid}: no part with ETag ${wrong.etag}`);
  const tmp = ctx.state.tmpPath();
  const hash = createHash('sha256');
  let written = 0;
  const out = createWriteStream(tmp);
  for (let n = 1; n <= count; n++) {
    for await (const c of createReadStream(ctx.state.partPath(oid, n))) {
      hash.update(c as Buffer);
      written += (c as Buffer).length;
      if (!out.write(c)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  for (let n = 1; n <= count; n++) {
    rmSync(ctx.state.partPath(oid, n), { force: true });
    ctx.partEtags.delete(`${oid}:${n}`);
  }
  const sha256 = hash.digest('hex');
  if (sha256 !== oid || written !== size) {
    rmSync(tmp, { force: true });
    return sendError(
      res,
      400,
      `the uploaded parts (${written} bytes, sha256 ${sha256}) do not match the declared oid ${oid} and size ${size}`,
    );
  }
  ctx.state.commitLfsObject(oid, tmp, { sizeBytes: written, sha256 });
  send(res, 200, '{}', { 'Content-Type': 'application/vnd.git-lfs+json' });
}
