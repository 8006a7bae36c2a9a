// Tree endpoints of the local Hub-protocol test server: the paged tree listing (`Link: rel="next"`)
// and paths-info, both describing entries the way the Hub does (LFS pointers, folders, lastCommit).
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { readBody, sendError, sendJson, sendRepoNotFound } from './_hub-server-http';
import { type HubRepoRecord, lfsPointerText } from './hub-server-state';

function entryFor(repo: HubRepoRecord, path: string, expand: boolean): Record<string, unknown> | undefined {
  const file = repo.files[path];
  if (file) {
    const out: Record<string, unknown> = { type: 'file', oid: file.gitOid, size: file.size, path };
    if (file.lfs) {
      // As on the real Hub, the listing shows the size the LFS pointer declares (storage checked it on upload).
      out.size = file.lfs.size;
      out.lfs = {
        oid: file.lfs.oid,
        size: file.lfs.size,
        pointerSize: lfsPointerText(file.lfs.oid, file.lfs.size).length,
      };
    }
    if (expand) out.lastCommit = file.lastCommit;
    return out;
  }
  const isDir = Object.keys(repo.files).some((p) => p.startsWith(`${path}/`));
  if (isDir)
    return { type: 'directory', oid: createHash('sha1').update(`${repo.head}:${path}`).digest('hex'), size: 0, path };
  return undefined;
}

/** `GET /api/{type}s/{id}/tree/{rev}/{path}` */
export function handleTree(
  ctx: HubServerContext,
  res: ServerResponse,
  url: URL,
  base: string,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
  path: string,
): void {
  if (!repo || !ctx.canRead(repo, auth)) {
    sendRepoNotFound(res, auth);
    return;
  }
  if (!ctx.checkRev(res, repo, rev)) return;
  const pageSize = ctx.pageSize;
  const recursive = url.searchParams.get('recursive') === 'true' || url.searchParams.get('recursive') === '1';
  const expand = url.searchParams.get('expand') === 'true' || url.searchParams.get('expand') === '1';
  const prefix = path === '' ? '' : `${path.replace(/\/+$/, '')}/`;
  if (prefix !== '' && repo.files[path]) {
    sendError(res, 404, `${path} is a file, not a folder`, 'EntryNotFound');
    return;
  }
  const under = Object.keys(repo.files).filter((p) => p.startsWith(prefix));
  if (prefix !== '' && under.length === 0) {
    sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
    return;
  }
  const paths = new Set<string>();
  for (const p of under) {
    const rel = p.slice(prefix.length).split('/');
    const depth = recursive ? rel.length : 1;
    for (let i = 1; i <= depth; i++) paths.add(prefix + rel.slice(0, i).join('/'));
  }
  const all = [...paths].sort();
  const offset = Number(Buffer.from(url.searchParams.get('cursor') ?? '', 'base64url').toString('utf8') || '0');
  const page = all.slice(offset, offset + pageSize).map((p) => entryFor(repo, p, expand));
  const headers: Record<string, string> = {};
  if (offset + pageSize < all.length) {
    const next = new URL(url.pathname, base);
    next.searchParams.set('recursive', String(recursive));
    next.searchParams.set('expand', String(expand));
    next.searchParams.set('cursor', Buffer.from(String(offset + pageSize)).toString('base64url'));
    headers.Link = `<${next.href}>; rel="next"`;
  }
  sendJson(res, 200, page, headers);
}

/** `POST /api/{type}s/{id}/paths-info/{rev}` */
export async function handlePathsInfo(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as { paths?: string[]; expand?: boolean };
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.checkRev(res, repo, rev)) return;
  const out = (body.paths ?? [])
    .map((p) => entryFor(repo, p.replace(/\/+$/, ''), body.expand === true))
    .filter((e) => e !== undefined);
  sendJson(res, 200, out);
}
