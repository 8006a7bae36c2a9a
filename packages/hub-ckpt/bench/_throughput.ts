// Throughput against the plain tool on the same machine, side by side, the order turned each rep (A B, B A, A B) so
// a load swing on a shared machine falls on both alike; each ratio is the median of the reps' ratios.
// - dirPushOverCpSync: a whole push to a directory store (kernel copy, the copy read back behind it and hashed for
//   the manifest, fsync of every file and folder, verify, pointer commit) against `cp -r SRC DST && sync` of the same
//   files on the same disk. `sync` flushes the whole machine; `cp -r && sync DST/*` (the copied files only) is given
//   beside.
// - hubPushOverPlainPut: a whole push to the test Hub server against one `fetch` PUT streaming the same number of
//   bytes (other content, so nothing is deduplicated) to the server's LFS storage URL, which hashes and stores it
//   as it does for a push.
import { createHash, randomFillSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { HubServer } from '@soup/test-utils';
import { DirStore, HubStore, pushCheckpoint } from '../src/index';

const MIB = 1024 * 1024;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

/** A checkpoint of fresh random bytes: 48 MiB + 16 MiB + a small JSON, as the toy trainer writes. */
function writeFreshCheckpoint(dir: string): number {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'model.safetensors'), randomFillSync(Buffer.allocUnsafe(48 * MIB)));
  writeFileSync(join(dir, 'optimizer.safetensors'), randomFillSync(Buffer.allocUnsafe(16 * MIB)));
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: 100 }));
  return readdirSync(dir).reduce((a, f) => a + statSync(join(dir, f)).size, 0);
}

function timedMs(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

async function timedAsyncMs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export interface DirThroughput {
  /** Median over the reps of (soup's MB/s) / (cp && sync's MB/s), same bytes, same disk. */
  dirPushOverCpSync: number;
  /** The same against `cp -r && sync <the copied files>`. */
  dirPushOverCpSyncFiles: number;
  eachRep: Array<{
    pushMs: number;
    /** CPU time of this process during the push (user + system, the kernel copy included): what load cannot bend. */
    pushCpuMs: number;
    cpSyncMs: number;
    cpSyncFilesMs: number;
    hashMs: number;
    uploadMs: number;
    verifyMs: number;
  }>;
  bytes: number;
}

export async function measureDirThroughput(p: { workDir: string; reps: number }): Promise<DirThroughput> {
  const eachRep: DirThroughput['eachRep'] = [];
  let bytes = 0;
  for (let rep = 0; rep < p.reps; rep++) {
    const src = join(p.workDir, `dir-src-${rep}`, 'checkpoint-100');
    bytes = writeFreshCheckpoint(src);
    execFileSync('sync');
    const cp = (): number =>
      timedMs(() => execFileSync('sh', ['-c', `cp -r "${src}" "${join(p.workDir, `cp-${rep}`)}" && sync`]));
    const cpFiles = (): number => {
      const dst = join(p.workDir, `cpf-${rep}`);
      return timedMs(() => execFileSync('sh', ['-c', `cp -r "${src}" "${dst}" && sync "${dst}"/* "${dst}"`]));
    };
    let timings: Awaited<ReturnType<typeof pushCheckpoint>>['timings'] | undefined;
    let cpuMs = 0;
    const push = async (): Promise<number> =>
      timedAsyncMs(async () => {
        const store = new DirStore({ root: join(p.workDir, `store-${rep}`) });
        const cpu0 = process.cpuUsage();
        timings = (await pushCheckpoint({ store, step: 100, dir: src, run: 'bench-run', keepLocal: Infinity })).timings;
        const cpu = process.cpuUsage(cpu0);
        cpuMs = (cpu.user + cpu.system) / 1000;
      });
    let pushMs: number;
    let cpSyncMs: number;
    let cpSyncFilesMs: number;
    if (rep % 2 === 0) {
      cpSyncMs = cp();
      cpSyncFilesMs = cpFiles();
      pushMs = await push();
    } else {
      pushMs = await push();
      cpSyncFilesMs = cpFiles();
      cpSyncMs = cp();
    }
    const t = timings as NonNullable<typeof timings>;
    eachRep.push({
      pushMs: Math.round(pushMs),
      pushCpuMs: Math.round(cpuMs),
      cpSyncMs: Math.round(cpSyncMs),
      cpSyncFilesMs: Math.round(cpSyncFilesMs),
      hashMs: Math.round(t.hashMs),
      uploadMs: Math.round(t.uploadMs),
      verifyMs: Math.round(t.verifyMs),
    });
    for (const d of [`dir-src-${rep}`, `cp-${rep}`, `cpf-${rep}`, `store-${rep}`])
      rmSync(join(p.workDir, d), { recursive: true, force: true });
  }
  return {
    dirPushOverCpSync: Number(median(eachRep.map((r) => r.cpSyncMs / r.pushMs)).toFixed(3)),
    dirPushOverCpSyncFiles: Number(median(eachRep.map((r) => r.cpSyncFilesMs / r.pushMs)).toFixed(3)),
    eachRep,
    bytes,
  };
}

/** One PUT streaming `files` one after another to the server's LFS storage URL; resolves when it answered 200. */
async function plainPut(server: HubServer, files: string[], oid: string, size: number): Promise<void> {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (const f of files) for await (const c of createReadStream(f, { highWaterMark: MIB })) yield c as Buffer;
  }
  const res = await fetch(`${server.url}/__lfs/${oid}?size=${size}`, {
    method: 'PUT',
    headers: { 'Content-Length': String(size), 'Content-Type': 'application/octet-stream' },
    body: Readable.toWeb(Readable.from(chunks())) as unknown as ReadableStream<Uint8Array>,
    duplex: 'half',
  } as RequestInit);
  if (res.status !== 200) throw new Error(`plain PUT answered ${res.status}: ${await res.text()}`);
}

export interface HubThroughput {
  /** Median over the reps of (soup's MB/s) / (one plain fetch PUT's MB/s), same byte count, same server. */
  hubPushOverPlainPut: number;
  eachRep: Array<{ pushMs: number; plainPutMs: number }>;
}

export async function measureHubThroughput(p: {
  server: HubServer;
  workDir: string;
  reps: number;
}): Promise<HubThroughput> {
  const eachRep: HubThroughput['eachRep'] = [];
  for (let rep = 0; rep < p.reps; rep++) {
    const src = join(p.workDir, `hub-src-${rep}`, 'checkpoint-100');
    const plainDir = join(p.workDir, `plain-src-${rep}`);
    writeFreshCheckpoint(src);
    const size = writeFreshCheckpoint(plainDir);
    const files = readdirSync(plainDir)
      .sort()
      .map((f) => join(plainDir, f));
    const h = createHash('sha256');
    for (const f of files) for await (const c of createReadStream(f)) h.update(c as Buffer);
    const oid = h.digest('hex');
    const push = (): Promise<number> =>
      timedAsyncMs(() =>
        pushCheckpoint({
          store: new HubStore({ repo: `soup-bench/tp-${rep}`, endpoint: p.server.url, token: p.server.token }),
          step: 100,
          dir: src,
          run: 'bench-run',
          keepLocal: Infinity,
        }),
      );
    const put = (): Promise<number> => timedAsyncMs(() => plainPut(p.server, files, oid, size));
    let pushMs: number;
    let plainPutMs: number;
    if (rep % 2 === 0) {
      plainPutMs = await put();
      pushMs = await push();
    } else {
      pushMs = await push();
      plainPutMs = await put();
    }
    eachRep.push({ pushMs: Math.round(pushMs), plainPutMs: Math.round(plainPutMs) });
    for (const d of [`hub-src-${rep}`, `plain-src-${rep}`])
      rmSync(join(p.workDir, d), { recursive: true, force: true });
  }
  return {
    hubPushOverPlainPut: Number(median(eachRep.map((r) => r.plainPutMs / r.pushMs)).toFixed(3)),
    eachRep,
  };
}
