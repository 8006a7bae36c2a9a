// A push of a checkpoint of many small files to the Hub test server: how many read requests its verify makes
// (the issue's `verifyRequestsPer1000SmallFiles`), and whether the client warns of listener growth.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HubServer } from '@soup/test-utils';
import { HubStore, pushCheckpoint } from '../src/index';

export interface SmallFileVerify {
  pushMs: number;
  /** Requests that read the repo (tree listing, paths-info, resolve/raw downloads) during the push's verify. */
  verifyRequests: number;
  /** Those requests, as `METHOD path`, for the bench's JSON. */
  readPaths: string[];
  checkedByOid: number;
  checkedByDownload: number;
  maxListenersWarnings: number;
}

export async function measureSmallFileVerify(p: {
  server: HubServer;
  workDir: string;
  files: number;
}): Promise<SmallFileVerify> {
  const dir = join(p.workDir, 'small', 'checkpoint-7');
  mkdirSync(join(dir, 'shards'), { recursive: true });
  writeFileSync(join(dir, 'trainer_state.json'), JSON.stringify({ global_step: 7 }));
  for (let i = 1; i < p.files; i++) writeFileSync(join(dir, 'shards', `part-${i}.json`), JSON.stringify({ i }));
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message);
  };
  process.on('warning', onWarning);
  const store = new HubStore({ repo: 'soup-bench/small-files', endpoint: p.server.url, token: p.server.token });
  const before = p.server.requests.length;
  const t0 = performance.now();
  try {
    // A signal, as the supervisor passes one: a listener per file on it is what warned before.
    const signal = new AbortController().signal;
    const res = await pushCheckpoint({ store, step: 7, dir, run: 'bench-small', keepLocal: Infinity, signal });
    // The verify is what runs between the data commit and the pointer commit.
    const during = p.server.requests.slice(before);
    const commits = during.flatMap((r, i) => (r.method === 'POST' && /\/commit\//.test(r.path) ? [i] : []));
    if (commits.length < 2) throw new Error(`bench: expected a data and a pointer commit, saw ${commits.length}`);
    const reads = during
      .slice((commits[0] ?? 0) + 1, commits[1])
      .filter((r) => /\/(tree|paths-info|resolve|raw)\//.test(r.path));
    return {
      pushMs: Math.round(performance.now() - t0),
      verifyRequests: reads.length,
      readPaths: reads.map((r) => `${r.method} ${r.path}`),
      checkedByOid: res.verify.checkedByOid,
      checkedByDownload: res.verify.checkedByDownload,
      maxListenersWarnings: warnings.length,
    };
  } finally {
    process.off('warning', onWarning);
  }
}
