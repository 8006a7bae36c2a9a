// Download endpoints of the local Hub-protocol test server: `resolve` (the file's bytes, LFS
// resolved) and `raw` (an LFS file's pointer text), with HEAD, Range, ETag and the wrongBytes fault.
import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { send, sendError, sendRepoNotFound } from './_hub-server-http';
import { type HubRepoRecord, lfsPointerText } from './hub-server-state';

function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'invalid' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (!Number.isFinite(n) || n === 0) return 'invalid';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'invalid';
  return { start, end };
}

/** `GET|HEAD [{type}s/]{id}/resolve/{rev}/{path}` and `.../raw/{rev}/{path}` */
export async function handleResolve(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string,
  path: string,
  kind: 'resolve' | 'raw',
): Promise<void> {
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.checkRev(res, repo, rev)) return;
  const file = repo.files[path];
  if (!file) return sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
  let body: { path: string; sizeBytes: number } | Buffer;
  let etag: string;
  const headers: Record<string, string> = {
    'Accept-Ranges': 'bytes',
    'Content-Type': 'application/octet-stream',
    'X-Repo-Commit': repo.head,
  };
  if (file.lfs && kind === 'raw') {
    body = Buffer.from(lfsPointerText(file.lfs.oid, file.lfs.size));
    etag = file.gitOid;
  } else {
    body = ctx.state.contentOf(file);
    etag = file.lfs ? file.lfs.oid : file.gitOid;
    if (file.lfs) {
      headers['X-Linked-Size'] = String(body.sizeBytes);
      headers['X-Linked-ETag'] = `"${etag}"`;
    }
  }
  headers.ETag = `"${etag}"`;
  const size = Buffer.isBuffer(body) ? body.length : body.sizeBytes;
  const range = parseRange(req.headers.range, size);
  if (range === 'invalid') {
    if (size === 0) {
      // An empty file: nothing to range over. Say so the way the client can read.
      return send(res, 200, '', { ...headers, 'Content-Range': 'bytes */0', 'Content-Length': '0' });
    }
    return send(res, 416, '', { ...headers, 'Content-Range': `bytes */${size}` });
  }
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  const length = Math.max(0, end - start + 1);
  headers['Content-Length'] = String(length);
  if (range) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  let flip = false;
  const wb = ctx.faults.wrongBytes;
  if (wb && wb.count > 0 && length > 1 && (wb.pathIncludes === undefined || path.includes(wb.pathIncludes))) {
    wb.count -= 1;
    flip = true;
  }
  const source = Buffer.isBuffer(body) ? [body.subarray(start, end + 1)] : createReadStream(body.path, { start, end });
  const corrupt = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (flip) {
        const copy = Buffer.from(chunk);
        copy[0] = (copy[0] ?? 0) ^ 0xff;
        flip = false;
        cb(null, copy);
      } else cb(null, chunk);
    },
  });
  try {
    await pipeline(source, corrupt, res);
  } catch {
    res.destroy();
  }
}
