// The super-squash endpoint of the local Hub-protocol test server (huggingface_hub's
// super_squash_history): a branch's history becomes one commit, freeing what only history held.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { readBody, sendError, sendJson, sendRepoNotFound } from './_hub-server-http';
import { type HubFileRecord, type HubRepoRecord, newCommitOid } from './hub-server-state';

/** `POST /api/{type}s/{id}/super-squash/{branch}` */
export async function handleSquash(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
): Promise<void> {
  const raw = (await readBody(req)).toString('utf8');
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.writeGate(res, auth)) return;
  if (rev !== 'main') return sendError(res, 404, `Invalid rev id: ${rev ?? ''}`, 'RevisionNotFound');
  let message = "Super-squash branch 'main' using huggingface_hub";
  if (raw.trim() !== '') {
    try {
      const body = JSON.parse(raw) as { message?: unknown };
      if (body.message !== undefined) {
        if (typeof body.message !== 'string' || body.message === '')
          return sendError(res, 400, '"message" must be a non-empty string');
        message = body.message;
      }
    } catch {
      return sendError(res, 400, 'body is not JSON');
    }
  }
  const commitId = newCommitOid();
  const date = new Date().toISOString();
  const files: Record<string, HubFileRecord> = {};
  for (const [p, f] of Object.entries(repo.files))
    files[p] = { ...f, lastCommit: { id: commitId, title: message, date } };
  // One commit left: only the blobs of the current tree stay reachable.
  ctx.state.save({ ...repo, files, head: commitId, commitCount: 1, history: {} });
  const k = `${repo.type}:${repo.id}`;
  ctx.squashes.set(k, (ctx.squashes.get(k) ?? 0) + 1);
  sendJson(res, 200, { commitId });
}
