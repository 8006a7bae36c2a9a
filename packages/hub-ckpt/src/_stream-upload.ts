// Node's fetch (undici) takes in a request body faster than the socket drains it: a Blob (the LFS PUT of a
// file (`FileBlob`), basic transfer or one multipart part) is read whole into memory, and so is a
// ReadableStream body, whatever its size. An upload of a several-GB optimizer state would hold it all. So a
// Blob body is sent here with node:http(s), piped from the Blob's stream with backpressure: at most a few
// chunks in flight, whatever the file's size. The reply is handed back as a fetch Response.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';

function urlOf(input: Parameters<typeof fetch>[0]): URL {
  return new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
}

function toResponse(res: IncomingMessage, url: URL): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
    headers.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
  const status = res.statusCode ?? 502;
  const empty = status === 204 || status === 205 || status === 304;
  if (empty) res.resume();
  const body = empty ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>);
  const response = new Response(body, { status, statusText: res.statusMessage ?? '', headers });
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}

/** One request whose body is streamed from `blob`, with its size as Content-Length (no chunked encoding). */
async function sendBlob(url: URL, init: RequestInit, blob: Blob): Promise<Response> {
  const headers: Record<string, string> = {};
  for (const [k, v] of new Headers(init.headers)) headers[k] = v;
  headers['content-length'] = String(blob.size);
  if (blob.type !== '' && headers['content-type'] === undefined) headers['content-type'] = blob.type;
  const send = url.protocol === 'https:' ? httpsRequest : url.protocol === 'http:' ? httpRequest : undefined;
  if (send === undefined) throw new TypeError(`fetch failed: unsupported protocol ${url.protocol}`);
  init.signal?.throwIfAborted();
  const req = send(url, { method: init.method ?? 'PUT', headers, ...(init.signal ? { signal: init.signal } : {}) });
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  const source = Readable.fromWeb(blob.stream() as unknown as NodeWebReadableStream<Uint8Array>);
  // A server may answer (a refusal) before it took every byte: the reply, not the end of the upload, decides.
  const sent = pipeline(source, req).catch((err: unknown) => err);
  try {
    const res = await answered;
    void sent;
    return toResponse(res, url);
  } catch (err) {
    source.destroy();
    if (init.signal?.aborted) throw init.signal.reason ?? err;
    // As fetch reports a network failure, so the retrying fetch treats it the same way.
    throw new TypeError('fetch failed', { cause: err });
  }
}

/**
 * Wraps `inner` so that a request with a Blob body is streamed from the Blob by node:http(s) instead of going
 * through `inner`; every other request goes to `inner` unchanged.
 */
export function streamBlobUploads(inner: typeof fetch): typeof fetch {
  const wrapped = (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    if (init === undefined || !(body instanceof Blob)) return inner(input, init);
    // A fresh stream per call, so a retry of the same init sends the bytes again from the start.
    return sendBlob(urlOf(input), init, body);
  };
  return wrapped as typeof fetch;
}
