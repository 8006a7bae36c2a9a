// HTTP plumbing of the local Hub-protocol test server: reading a body, answering with text, JSON or a
// Hub-shaped error (the `X-Error-Message` / `X-Error-Code` headers the client reads).
import type { IncomingMessage, ServerResponse } from 'node:http';

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  send(res, status, JSON.stringify(value), { 'Content-Type': 'application/json; charset=utf-8', ...headers });
}

export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  errorCode?: string,
  headers: Record<string, string> = {},
): void {
  sendJson(
    res,
    status,
    { error: message },
    {
      'X-Error-Message': message.replace(/[^\x20-\x7e]/g, '?'),
      ...(errorCode ? { 'X-Error-Code': errorCode } : {}),
      ...headers,
    },
  );
}

export function sendRepoNotFound(res: ServerResponse, auth: string): void {
  // Like the Hub: an anonymous caller cannot tell a private repo from a missing one, and gets a 401.
  sendError(res, auth === 'ok' ? 404 : 401, 'Repository not found', 'RepoNotFound');
}
