// LFS endpoints of the local Hub-protocol test server: the batch API (`{repo}.git/info/lfs/objects/batch`;
// basic transfer, or multipart (_hub-server-multipart) when the server has a part size and the client offers
// it) and the storage PUT it points to, which keeps an object only when its bytes hash to the declared oid and
// size, as real LFS storage does. The PUT faults (drop, truncate, corrupt) act here.
import { createHash } from 'node:crypto';
import { createWriteStream, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { readBody, send, sendError, sendRepoNotFound } from './_hub-server-http';
import { multipartAction } from './_hub-server-multipart';
import type { HubRepoRecord } from './hub-server-state';

/** `POST [{type}s/]{id}.git/info/lfs/objects/batch` */
export async function handleBatch(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  base: string,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8')) as {
    operation?: string;
    transfers?: string[];
    objects?: Array<{ oid: string; size: number }>;
  };
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.writeGate(res, auth)) return;
  if (ctx.take('batch503')) return sendError(res, 503, 'Service temporarily unavailable (injected fault)');
  if (body.operation !== 'upload') return sendError(res, 422, 'only the upload operation is implemented');
  if (!(body.transfers ?? ['basic']).includes('basic'))
    return sendError(res, 422, 'the basic transfer must be offered');
  const chunk = ctx.multipartChunkBytes;
  const multipart = chunk !== undefined && (body.transfers ?? []).includes('multipart');
  const objects = (body.objects ?? []).map((o) => {
    if (!/^[0-9a-f]{64}$/.test(o.oid) || !Number.isInteger(o.size) || o.size < 0) {
      return { oid: o.oid, size: o.size, error: { code: 422, message: 'invalid oid or size' } };
    }
    const have = ctx.state.lfsMeta(o.oid);
    if (have && have.sha256 === o.oid && have.sizeBytes === o.size)
      return { oid: o.oid, size: o.size, authenticated: true };
    if (multipart && o.size > chunk) {
      const upload = multipartAction(base, o.oid, o.size, chunk);
      return { oid: o.oid, size: o.size, authenticated: true, actions: { upload } };
    }
    return {
      oid: o.oid,
      size: o.size,
      authenticated: true,
      actions: { upload: { href: `${base}/__lfs/${o.oid}?size=${o.size}`, expires_in: 3600 } },
    };
  });
  send(res, 200, JSON.stringify({ transfer: 'basic', objects }), { 'Content-Type': 'application/vnd.git-lfs+json' });
}

/** `PUT /__lfs/{oid}?size=N`: the storage URL handed out by the batch API. */
export async function handlePut(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  oid: string,
): Promise<void> {
  if (!/^[0-9a-f]{64}$/.test(oid)) {
    await readBody(req);
    return sendError(res, 400, 'bad oid');
  }
  const expected = Number(req.headers['content-length'] ?? Number.NaN);
  const half = Number.isFinite(expected) ? Math.floor(expected / 2) : 0;
  const drop = ctx.take('dropPut');
  const truncate = !drop && ctx.take('truncatePut');
  let flip = !drop && !truncate && ctx.take('corruptPut');
  const tmp = ctx.state.tmpPath();
  const hash = createHash('sha256');
  let received = 0;
  let written = 0;
  const gate = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (drop && received + chunk.length >= half) {
        req.socket.destroy();
        cb(new Error('connection dropped (injected fault)'));
        return;
      }
      received += chunk.length;
      let piece = chunk;
      if (truncate) piece = chunk.subarray(0, Math.max(0, Math.min(chunk.length, half - written)));
      if (flip && piece.length > 0) {
        piece = Buffer.from(piece);
        piece[0] = (piece[0] ?? 0) ^ 0xff;
        flip = false;
      }
      written += piece.length;
      hash.update(piece);
      cb(null, piece);
    },
  });
  try {
    await pipeline(req, gate, createWriteStream(tmp));
  } catch {
    rmSync(tmp, { force: true });
    const socket = req.socket as typeof req.socket | null;
    if (!res.headersSent && !res.destroyed && socket !== null && !socket.destroyed)
      sendError(res, 400, 'upload interrupted');
    return;
  }
  const sha256 = hash.digest('hex');
  // Real LFS storage checks what arrived against the declared oid and size, and keeps nothing else.
  const declared = Number(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('size'));
  if (sha256 !== oid || (Number.isFinite(declared) && written !== declared)) {
    rmSync(tmp, { force: true });
    return sendError(
      res,
      400,
      `the uploaded bytes (${written} bytes, sha256 ${sha256}) ` +
        `do not match the declared oid ${oid} and size ${declared}`,
    );
  }
  ctx.state.commitLfsObject(oid, tmp, { sizeBytes: written, sha256 });
  send(res, 200, '', { ETag: `"${createHash('md5').update(sha256).digest('hex')}"` });
}
