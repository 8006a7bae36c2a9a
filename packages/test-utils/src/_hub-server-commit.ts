// Commit endpoints of the local Hub-protocol test server: preupload (which files go to LFS) and the
// NDJSON commit (header, file, lfsFile, deletedFile, deletedFolder), with the commit faults
// (429, 500, a lost reply, an outage after N commits) and the history the Hub bills.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubAuth, HubServerContext } from './_hub-server-context';
import { readBody, sendError, sendJson, sendRepoNotFound } from './_hub-server-http';
import { countCommit, refuseOverQuota } from './_hub-server-quota';
import {
  blobOf,
  gitBlobOid,
  type HubFileRecord,
  type HubRepoRecord,
  lfsPointerText,
  newCommitOid,
} from './hub-server-state';

const LFS_EXTENSIONS =
  /\.(safetensors|bin|pt|pth|ckpt|h5|onnx|msgpack|npy|npz|pkl|pickle|gz|zip|tar|zst|xz|parquet|arrow|model|gguf)$/i;

function isSafeRepoPath(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\\') || path.includes('\0')) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

/** `POST /api/{type}s/{id}/preupload/{rev}` */
export async function handlePreupload(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
): Promise<void> {
  const body = JSON.parse((await readBody(req)).toString('utf8')) as {
    files?: Array<{ path: string; size: number; sample: string }>;
  };
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.writeGate(res, auth) || !ctx.checkRev(res, repo, rev)) return;
  const files = (body.files ?? []).map((f) => {
    const sample = Buffer.from(f.sample ?? '', 'base64');
    const lfs = f.size >= ctx.lfsThreshold || LFS_EXTENSIONS.test(f.path) || sample.includes(0);
    return { path: f.path, uploadMode: lfs ? 'lfs' : 'regular', shouldIgnore: false };
  });
  sendJson(res, 200, { files, commitOid: repo.head });
}

/** `POST /api/{type}s/{id}/commit/{rev}` */
export async function handleCommit(
  ctx: HubServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  repo: HubRepoRecord | undefined,
  auth: HubAuth,
  rev: string | undefined,
  base: string,
): Promise<void> {
  const raw = (await readBody(req)).toString('utf8');
  if (!repo || !ctx.canRead(repo, auth)) return sendRepoNotFound(res, auth);
  if (!ctx.writeGate(res, auth) || !ctx.checkRev(res, repo, rev)) return;
  if (ctx.take('commit429')) {
    const after = ctx.faults.commit429?.retryAfterS;
    return sendError(
      res,
      429,
      'Too many requests (injected fault)',
      undefined,
      after === undefined ? {} : { 'Retry-After': String(after) },
    );
  }
  if (ctx.take('commit500')) return sendError(res, 500, 'Internal Error (injected fault)');
  if (refuseOverQuota(ctx, res, `${repo.type}:${repo.id}`)) return;
  let lines: Array<{ key: string; value: Record<string, unknown> }>;
  try {
    lines = raw
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { key: string; value: Record<string, unknown> });
  } catch {
    return sendError(res, 400, 'commit body is not NDJSON');
  }
  const header = lines[0];
  if (header?.key !== 'header' || typeof header.value.summary !== 'string' || header.value.summary === '') {
    return sendError(res, 400, 'the first NDJSON line must be the header with a summary');
  }
  if (typeof header.value.parentCommit === 'string' && header.value.parentCommit !== repo.head) {
    return sendError(res, 412, 'A commit has happened since. Please refresh and try again.');
  }
  const commitId = newCommitOid();
  const lastCommit = { id: commitId, title: header.value.summary, date: new Date().toISOString() };
  const files: Record<string, HubFileRecord> = { ...repo.files };
  for (const { key, value } of lines.slice(1)) {
    const path = String(value.path ?? '');
    if (!isSafeRepoPath(path)) return sendError(res, 400, `invalid path in commit: ${JSON.stringify(path)}`);
    if (key === 'file') {
      const content = Buffer.from(String(value.content ?? ''), value.encoding === 'base64' ? 'base64' : 'utf8');
      const ws = ctx.faults.wrongStored;
      if (
        ws &&
        ws.count > 0 &&
        content.length > 1 &&
        (ws.pathIncludes === undefined || path.includes(ws.pathIncludes))
      ) {
        ws.count -= 1;
        content[0] = (content[0] ?? 0) ^ 0xff;
      }
      const sha256 = ctx.state.putObject(content);
      files[path] = { size: content.length, gitOid: gitBlobOid(content), sha256, lastCommit };
    } else if (key === 'lfsFile') {
      const oid = String(value.oid ?? '');
      const size = Number(value.size);
      const meta = ctx.state.lfsMeta(oid);
      if (!meta || meta.sha256 !== oid || meta.sizeBytes !== size) {
        return sendError(
          res,
          422,
          'Your push was rejected because an LFS pointer pointed to a file that does not exist. ' +
            `Offending file: - ${path}`,
        );
      }
      files[path] = {
        size,
        gitOid: gitBlobOid(Buffer.from(lfsPointerText(oid, size))),
        lfs: { oid, size },
        lastCommit,
      };
    } else if (key === 'deletedFile') {
      if (!files[path]) return sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
      delete files[path];
    } else if (key === 'deletedFolder') {
      for (const p of Object.keys(files)) if (p.startsWith(`${path}/`)) delete files[p];
    } else {
      return sendError(res, 400, `unknown commit operation ${JSON.stringify(key)}`);
    }
  }
  // Every blob of the parent commit stays reachable from history.
  const history: Record<string, number> = { ...repo.history };
  for (const f of Object.values(repo.files)) {
    const [id, size] = blobOf(f);
    history[id] = size;
  }
  const next: HubRepoRecord = { ...repo, files, head: commitId, commitCount: repo.commitCount + 1, history };
  ctx.state.save(next);
  const k = `${repo.type}:${repo.id}`;
  ctx.commits.set(k, (ctx.commits.get(k) ?? 0) + 1);
  countCommit(ctx, k);
  const prefix = repo.type === 'model' ? '' : `${repo.type}s/`;
  const after = ctx.faults.outageAfter;
  if (after && after.afterCommits > 0) {
    after.afterCommits -= 1;
    if (after.afterCommits === 0) {
      ctx.faults.outageUntilMs = Date.now() + after.durationMs;
      delete ctx.faults.outageAfter;
    }
  }
  const lost = ctx.faults.commitLostReply;
  if (lost && lost.count > 0 && (lost.skip ?? 0) > 0) lost.skip = (lost.skip ?? 0) - 1;
  else if (ctx.take('commitLostReply')) {
    if ((ctx.faults.commitLostReply?.as ?? 'drop') === 'drop') {
      req.socket.destroy();
      return;
    }
    return sendError(res, 500, 'Internal Error after the commit was applied (injected fault)');
  }
  sendJson(res, 200, {
    success: true,
    commitOid: commitId,
    commitUrl: `${base}/${prefix}${repo.id}/commit/${commitId}`,
    hookOutput: '',
  });
}
