// The router of the local Hub-protocol test server: admin and LFS storage routes first, then the
// outage and auth faults, then one endpoint module per family (repos, tree, commit, squash, LFS, resolve).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleCommit, handlePreupload } from './_hub-server-commit';
import type { HubServerContext } from './_hub-server-context';
import { readBody, sendError, sendJson } from './_hub-server-http';
import { handleBatch, handlePut } from './_hub-server-lfs';
import { handleComplete, handlePartPut } from './_hub-server-multipart';
import { handleCommitList, handleCreate, handleDelete, handleRepoInfo, handleWhoami } from './_hub-server-repos';
import { handleResolve } from './_hub-server-resolve';
import { handleSquash } from './_hub-server-squash';
import { handlePathsInfo, handleTree } from './_hub-server-tree';
import type { HubServerFaults } from './hub-server-faults';
import type { HubRepoType } from './hub-server-state';

const TYPES: Record<string, HubRepoType> = { models: 'model', datasets: 'dataset', spaces: 'space' };

export async function routeHubRequest(ctx: HubServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const base = `http://${req.headers.host ?? '127.0.0.1'}`;
  const parts = url.pathname
    .split('/')
    .slice(1)
    .map((p) => decodeURIComponent(p));
  const method = req.method ?? 'GET';

  if (parts[0] === '__lfs' && parts[1] && method === 'PUT') return handlePut(ctx, req, res, parts[1]);
  if (parts[0] === '__lfs-part' && parts[1] && parts[2] && method === 'PUT')
    return handlePartPut(ctx, req, res, parts[1], parts[2]);
  if (parts[0] === '__lfs-complete' && parts[1] && method === 'POST') return handleComplete(ctx, req, res, parts[1]);
  if (parts[0] === '__admin' && parts[1] === 'faults') {
    if (req.headers.authorization !== `Bearer ${ctx.token}`)
      return sendError(res, 401, 'Invalid credentials in Authorization header');
    if (method === 'POST') ctx.faults = JSON.parse((await readBody(req)).toString('utf8') || '{}') as HubServerFaults;
    return sendJson(res, 200, ctx.faults);
  }

  const faults = ctx.faults;
  if (faults.outageUntilMs !== undefined && Date.now() < faults.outageUntilMs) {
    if (faults.outageAs === 'drop') {
      req.socket.destroy();
      return;
    }
    await readBody(req);
    return sendError(res, 503, 'Service Unavailable (injected outage)');
  }

  const auth = ctx.checkAuth(req);
  if (faults.unauthorized || auth === 'invalid') {
    await readBody(req);
    return sendError(res, 401, 'Invalid credentials in Authorization header');
  }

  if (parts[0] === 'api') {
    if (parts[1] === 'whoami-v2' && method === 'GET') return handleWhoami(res, auth);
    if (parts[1] === 'repos' && parts[2] === 'create' && method === 'POST')
      return handleCreate(ctx, req, res, auth, base);
    if (parts[1] === 'repos' && parts[2] === 'delete' && method === 'DELETE') return handleDelete(ctx, req, res, auth);
    const type = TYPES[parts[1] ?? ''];
    if (type && parts[2] && parts[3]) {
      const repoId = `${parts[2]}/${parts[3]}`;
      const rest = parts.slice(4);
      const repo = ctx.state.get(type, repoId);
      if (rest.length === 0 && method === 'GET') return handleRepoInfo(ctx, res, url, repoId, repo, auth);
      const op = rest[0];
      if (op === 'super-squash' && method === 'POST') return handleSquash(ctx, req, res, repo, auth, rest[1]);
      if (op === 'preupload' && method === 'POST') return handlePreupload(ctx, req, res, repo, auth, rest[1]);
      if (op === 'commits' && method === 'GET') return handleCommitList(ctx, res, repo, auth, rest[1]);
      if (op === 'commit' && method === 'POST') return handleCommit(ctx, req, res, repo, auth, rest[1], base);
      if (op === 'paths-info' && method === 'POST') return handlePathsInfo(ctx, req, res, repo, auth, rest[1]);
      if (op === 'tree' && method === 'GET')
        return handleTree(ctx, res, url, base, repo, auth, rest[1], rest.slice(2).join('/'));
    }
    return sendError(res, 404, `no such API route: ${method} ${url.pathname}`);
  }

  // Repo routes: [datasets/|spaces/]ns/name(.git/info/lfs/objects/batch | /resolve/rev/path | /raw/rev/path)
  let type: HubRepoType = 'model';
  let rest = parts;
  if (parts[0] === 'datasets' || parts[0] === 'spaces') {
    type = parts[0] === 'datasets' ? 'dataset' : 'space';
    rest = parts.slice(1);
  }
  const [ns, nameRaw] = rest;
  if (ns && nameRaw) {
    if (nameRaw.endsWith('.git') && rest.slice(2).join('/') === 'info/lfs/objects/batch' && method === 'POST') {
      return handleBatch(ctx, req, res, ctx.state.get(type, `${ns}/${nameRaw.slice(0, -4)}`), auth, base);
    }
    const kind = rest[2];
    if ((kind === 'resolve' || kind === 'raw') && (method === 'GET' || method === 'HEAD') && rest[3]) {
      return handleResolve(
        ctx,
        req,
        res,
        ctx.state.get(type, `${ns}/${nameRaw}`),
        auth,
        rest[3],
        rest.slice(4).join('/'),
        kind,
      );
    }
  }
  return sendError(res, 404, `no such route: ${method} ${url.pathname}`);
}
