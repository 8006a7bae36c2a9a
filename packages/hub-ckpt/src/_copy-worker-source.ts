// The source of a copy-and-hash worker thread (see _hash-copy.ts), run with `new Worker(source, { eval: true })` so
// it is the same under the built package and under the tests' TypeScript sources. Plain CommonJS JavaScript: the
// type checker does not see it, the tests of _hash-copy.ts do.
//
// A job { id, src, dest, gitBlobSizeBytes, sizeBytes }: creates `dest` exclusively, opens it for reading, starts the
// kernel's copy of `src` into it (copyFile with COPYFILE_FICLONE: a reflink where the file system has one, else
// copy_file_range) and reads the copy behind the kernel while it writes, hashing what it reads. A read never returns
// bytes past the file's size, and the size grows only once the bytes below it are in place, so every byte hashed is
// one the copy holds. The end is a read that found nothing, started after the copy had finished. Answers
// { id, sha256, sizeBytes, gitSha1? } or { id, error, code } (the copy removed).
export const COPY_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { constants } = require('node:fs');
const { copyFile, open, unlink } = require('node:fs/promises');
const CHUNK = 4 * 1024 * 1024;
const spare = [];

async function copyAndHash(job) {
  const chunk = Math.min(CHUNK, Math.max(job.sizeBytes, 64 * 1024));
  await (await open(job.dest, 'wx')).close();
  let fh;
  let copying = Promise.resolve();
  let reading;
  const bufs = [spare.pop() || Buffer.allocUnsafe(CHUNK), spare.pop() || Buffer.allocUnsafe(CHUNK)];
  try {
    fh = await open(job.dest, 'r');
    let copied = false;
    copying = copyFile(job.src, job.dest, constants.COPYFILE_FICLONE).then(() => {
      copied = true;
    });
    copying.catch(() => undefined);
    const hash = createHash('sha256');
    const sha1 =
      job.gitBlobSizeBytes === undefined ? undefined : createHash('sha1').update('blob ' + job.gitBlobSizeBytes + '\0');
    let at = 0;
    let i = 0;
    let afterCopy = copied;
    reading = fh.read(bufs[0], 0, chunk, 0);
    for (;;) {
      const { bytesRead } = await reading;
      if (bytesRead === 0) {
        if (afterCopy) break;
        await Promise.race([copying, new Promise((resolve) => setTimeout(resolve, 1))]);
        afterCopy = copied;
        reading = fh.read(bufs[i % 2], 0, chunk, at);
        continue;
      }
      const bytes = bufs[i % 2].subarray(0, bytesRead);
      at += bytesRead;
      i++;
      afterCopy = copied;
      reading = fh.read(bufs[i % 2], 0, chunk, at);
      hash.update(bytes);
      if (sha1) sha1.update(bytes);
    }
    reading = undefined;
    await copying;
    const out = { sha256: hash.digest('hex'), sizeBytes: at };
    if (sha1 && at === job.gitBlobSizeBytes) out.gitSha1 = sha1.digest('hex');
    return out;
  } catch (err) {
    await Promise.allSettled([reading, copying]);
    reading = undefined;
    if (fh) await fh.close().catch(() => undefined);
    fh = undefined;
    await unlink(job.dest).catch(() => undefined);
    throw err;
  } finally {
    if (fh) await fh.close();
    if (reading === undefined) spare.push(...bufs);
  }
}

parentPort.on('message', (job) => {
  copyAndHash(job).then(
    (out) => parentPort.postMessage(Object.assign({ id: job.id }, out)),
    (err) => parentPort.postMessage({ id: job.id, error: String(err && err.message), code: err && err.code }),
  );
});
`;
