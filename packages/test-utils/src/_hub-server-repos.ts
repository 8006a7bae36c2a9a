// Repo endpoints of the local Hub-protocol test server: whoami, repo create / delete, and repo info
// (`GET /api/{type}s/{id}`, with `expand[]` answering only the fields asked for).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { readBody, sendError, sendJson, sendRepoNotFound } from './_hub-server-http';
import { type HubRepoRecord, type HubRepoType, storageBytes } from './hub-server-state';

/** `GET /api/whoami-v2` */
export function handleWhoami(res: ServerResponse, auth: HubAuth): void {
  if (auth !== 'ok') {
    sendError(res, 401, 'Invalid credentials in Authorization header');
    return;
  }
  sendJson(res, 200, {
    type: 'user',
    id: 'soup-test-user',
    name: 'soup-test',
    fullname: 'Soup Test',
    email: 'soup-test@example.invalid',
    emailVerified: true,
    isPro: false,
    orgs: [],
    auth: {
      type: 'access_token',
      accessToken: { displayName: 'soup-test', role: 'write', createdAt: new Date(0).toISOString() },
    },
  });
}

/** `POST /api/repos/create` */
export async function handleCreate(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  auth: HubAuth,
  base: string,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
    name?: string;
    organization?: string;
    type?: HubRepoType;
    visibility?: string;
    private?: boolean;
  };
  if (!ctx.writeGate(res, auth)) return;
  const type = body.type ?? 'model';
  if (!body.name || !/^[\w.-]+$/.test(body.name) || (body.organization && !/^[\w.-]+$/.test(body.organization))) {
    return sendError(res, 400, 'Invalid repo name');
  }
  const id = `${body.organization ?? 'soup-test'}/${body.name}`;
  const prefix = type === 'model' ? '' : `${type}s/`;
  if (ctx.state.get(type, id)) {
    return sendJson(res, 409, { error: `You already created this ${type} repo`, url: `${base}/${prefix}${id}` });
  }
  ctx.state.create(type, id, body.visibility === 'private' || body.private === true);
  sendJson(res, 200, { url: `${base}/${prefix}${id}`, name: id, id: randomBytes(12).toString('hex') });
}

/** `DELETE /api/repos/delete` */
export async function handleDelete(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  auth: HubAuth,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
    name?: string;
    organization?: string;
    type?: HubRepoType;
  };
  if (!ctx.writeGate(res, auth)) return;
  const id = `${body.organization ?? 'soup-test'}/${body.name ?? ''}`;
  if (!ctx.state.delete(body.type ?? 'model', id)) return sendError(res, 404, 'Repository not found', 'RepoNotFound');
  sendJson(res, 200, {});
}

/** `GET /api/{type}s/{id}` */
export function handleRepoInfo(
  ctx: HubServerContext,
  res: ServerResponse,
  url: URL,
  repoId: string,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
): void {
  if (!repo || !ctx.canRead(repo, auth)) {
    sendRepoNotFound(res, auth);
    return;
  }
  // As on the Hub, `expand[]=usedStorage` answers only the fields asked for.
  const expand = url.searchParams.getAll('expand[]').concat(url.searchParams.getAll('expand'));
  if (expand.length > 0) {
    const out: Record<string, unknown> = { _id: repoId, id: repoId };
    for (const f of expand) {
      if (f === 'usedStorage') out.usedStorage = storageBytes(repo);
      else if (f === 'private') out.private = repo.private;
      else if (f === 'sha') out.sha = repo.head;
      else {
        sendError(res, 400, `"expand" must be one of the known fields, got ${JSON.stringify(f)}`);
        return;
      }
    }
    sendJson(res, 200, out);
    return;
  }
  sendJson(res, 200, {
    _id: repoId,
    id: repoId,
    private: repo.private,
    sha: repo.head,
    createdAt: repo.createdAt,
    likes: 0,
  });
}

/**
 * `GET /api/{type}s/{id}/commits/{rev}`: the head commit only (this server keeps no per-commit records), with the
 * history's length in `X-Total-Count` as the Hub sends it.
 */
export function handleCommitList(
  ctx: HubServerContext,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
): void {
  if (!repo || !ctx.canRead(repo, auth)) {
    sendRepoNotFound(res, auth);
    return;
  }
  if (!ctx.checkRev(res, repo, rev)) return;
  const head = { id: repo.head, title: 'head', message: '', authors: [], date: new Date(ctx.now()).toISOString() };
  sendJson(res, 200, [head], { 'X-Total-Count': String(repo.commitCount) });
}
