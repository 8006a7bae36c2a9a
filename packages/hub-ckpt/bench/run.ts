// Bench: push and cold-pull a 64 MiB checkpoint through the Hub-protocol test server (real
// @huggingface/hub client, real HTTP on 127.0.0.1), then SIGKILL a pushing child at every phase on
// both stores; then the peak RSS of a push and a pull of one large file (`--large-mib N`, default 1536) on both
// stores, each in a child process; then throughput against the plain tools side by side (bench/_throughput.ts:
// a directory store against `cp -r && sync`, a Hub push against one plain fetch PUT), `--reps N` (default 3) each.
// Prints a table, or ONE JSON object with --json; writes bench-results/hub-ckpt.json.
import { randomFillSync } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTempDir, startHubServer } from '@soup/test-utils';
import { HubStore, pullResume, pushCheckpoint } from '../src/index';
import {
  CRASH_PHASES,
  FAULT_POINTS,
  faultKinds,
  RACE_POINTS,
  raceKinds,
  runCrashPoint,
  runFaultPoint,
  runRacePoint,
  type CrashPointResult,
} from './_crash';
import { measureTransferRss } from './_rss';
import { measureSmallFileVerify } from './_small-files';
import { measureDirThroughput, measureHubThroughput, median } from './_throughput';

const json = process.argv.includes('--json');
const largeFlag = process.argv.indexOf('--large-mib');
// 1.5 GiB: sparse on disk, so it runs on a small machine, yet every byte is read, hashed and sent (the directory
// store's copy is not sparse: it writes the whole size, twice with the pull).
const LARGE_MIB = largeFlag === -1 ? 1536 : Number(process.argv[largeFlag + 1]);
if (!Number.isInteger(LARGE_MIB) || LARGE_MIB < 1) throw new Error('bench: --large-mib takes a whole number >= 1');
const repsFlag = process.argv.indexOf('--reps');
const REPS = repsFlag === -1 ? 3 : Number(process.argv[repsFlag + 1]);
if (!Number.isInteger(REPS) || REPS < 1) throw new Error('bench: --reps takes a whole number >= 1');
const MIB = 1024 * 1024;
const log = (line: string): void => {
  if (!json) process.stdout.write(`${line}\n`);
};

const tmp = makeTempDir('soup-hub-bench-');
const server = await startHubServer({ dir: join(tmp.dir, 'hub') });
try {
  const src = join(tmp.dir, 'local', 'checkpoint-100');
  mkdirSync(src, { recursive: true });
  const totalBytes = 64 * MIB + JSON.stringify({ global_step: 100 }).length;

  const pushes: Array<{ totalMs: number; verifyMs: number; uploadMs: number; hashMs: number; pointerMs: number }> = [];
  const pulls: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    // Fresh random content each rep, so no upload is skipped because the server already holds the object.
    writeFileSync(join(src, 'model.safetensors'), randomFillSync(Buffer.allocUnsafe(48 * MIB)));
    writeFileSync(join(src, 'optimizer.safetensors'), randomFillSync(Buffer.allocUnsafe(16 * MIB)));
    writeFileSync(join(src, 'trainer_state.json'), JSON.stringify({ global_step: 100 }));
    const repo = `soup-bench/ckpt-${rep}`;
    const store = new HubStore({ repo, endpoint: server.url, token: server.token });
    const res = await pushCheckpoint({ store, step: 100, dir: src, run: 'bench-run', keepLocal: Infinity });
    pushes.push(res.timings);
    log(
      `push ${rep + 1}/${REPS}: ${res.timings.totalMs.toFixed(0)} ms (verify ${res.timings.verifyMs.toFixed(1)}` +
        ` ms, ${res.verify.checkedByOid} by oid, ${res.verify.checkedByDownload} downloaded)`,
    );

    const cold = join(tmp.dir, `cold-${rep}`);
    const fresh = new HubStore({ repo, endpoint: server.url, token: server.token });
    const t0 = performance.now();
    const outcome = await pullResume({ store: fresh, run: 'bench-run', dir: cold });
    if (outcome.outcome !== 'resume') throw new Error(`bench: expected a resume, got ${outcome.outcome}`);
    pulls.push(performance.now() - t0);
    log(`cold pull ${rep + 1}/${REPS}: ${pulls[rep]?.toFixed(0)} ms`);
    rmSync(cold, { recursive: true, force: true });
  }
  const pushMs = median(pushes.map((p) => p.totalMs));
  const verifyMs = median(pushes.map((p) => p.verifyMs));
  const pullMs = median(pulls);

  const crash: CrashPointResult[] = [];
  for (const kind of ['hub', 'dir'] as const) {
    for (const phase of CRASH_PHASES) {
      const work = makeTempDir('soup-hub-bench-crash-');
      try {
        const r = await runCrashPoint({ kind, phase, workDir: work.dir, server });
        crash.push(r);
        log(
          `crash ${kind}/${phase}: pointer after kill ${r.pointerStepAfterKill}, resumed ${r.resumedStep}` +
            `${r.via ? ` (${r.via})` : ''}, violations ${r.violations.length}`,
        );
      } finally {
        work.cleanup();
      }
    }
  }
  for (const fault of FAULT_POINTS) {
    for (const kind of faultKinds(fault)) {
      const work = makeTempDir('soup-hub-bench-fault-');
      try {
        const r = await runFaultPoint({ kind, fault, workDir: work.dir, server });
        crash.push(r);
        log(
          `fault ${kind}/${fault}: pointer after push ${r.pointerStepAfterKill}, resumed ${r.resumedStep}` +
            `${r.via ? ` (${r.via})` : ''}, violations ${r.violations.length}`,
        );
      } finally {
        work.cleanup();
      }
    }
  }

  for (const race of RACE_POINTS) {
    for (const kind of raceKinds(race)) {
      const work = makeTempDir('soup-hub-bench-race-');
      try {
        const r = await runRacePoint({ kind, race, workDir: work.dir, server });
        crash.push(r);
        log(
          `race ${kind}/${race}: pointer after ${r.pointerStepAfterKill}, resumed ${r.resumedStep}` +
            `${r.via ? ` (${r.via})` : ''}, violations ${r.violations.length}` +
            `${r.violations.length ? `: ${r.violations.join(' | ')}` : ''}`,
        );
      } finally {
        work.cleanup();
      }
    }
  }

  const rssByStore: Record<'hub' | 'dir', Awaited<ReturnType<typeof measureTransferRss>>> = {} as never;
  for (const kind of ['hub', 'dir'] as const) {
    const rssWork = makeTempDir('soup-hub-bench-rss-');
    try {
      rssByStore[kind] = await measureTransferRss({
        server,
        workDir: rssWork.dir,
        repo: 'soup-bench/rss',
        bytes: LARGE_MIB * MIB,
        ...(kind === 'dir' ? { dirRoot: join(rssWork.dir, 'store') } : {}),
      });
    } finally {
      rssWork.cleanup();
    }
    const r = rssByStore[kind];
    log(
      `large file ${LARGE_MIB} MiB, ${kind} store: push +${r.push.overBaselineMiB} MiB RSS (${r.push.ms} ms), ` +
        `pull +${r.pull.overBaselineMiB} MiB RSS (${r.pull.ms} ms)`,
    );
  }
  const worstRss = (dir: 'push' | 'pull'): number =>
    Math.max(rssByStore.hub[dir].overBaselineMiB, rssByStore.dir[dir].overBaselineMiB);

  const tpWork = makeTempDir('soup-hub-bench-tp-');
  let dirTp: Awaited<ReturnType<typeof measureDirThroughput>>;
  let hubTp: Awaited<ReturnType<typeof measureHubThroughput>>;
  try {
    dirTp = await measureDirThroughput({ workDir: tpWork.dir, reps: REPS });
    hubTp = await measureHubThroughput({ server, workDir: tpWork.dir, reps: REPS });
  } finally {
    tpWork.cleanup();
  }
  for (const r of dirTp.eachRep)
    log(
      `dir push ${r.pushMs} ms, ${r.pushCpuMs} ms CPU (hash ${r.hashMs}, copy+fsync+re-hash ${r.uploadMs}, ` +
        `verify ${r.verifyMs}) vs ` +
        `cp && sync ${r.cpSyncMs} ms, cp && sync <files> ${r.cpSyncFilesMs} ms`,
    );
  for (const r of hubTp.eachRep) log(`hub push ${r.pushMs} ms vs one plain fetch PUT ${r.plainPutMs} ms`);

  const small = await measureSmallFileVerify({ server, workDir: tmp.dir, files: 1000 });
  log(
    `1000 small files: push ${small.pushMs} ms, ${small.verifyRequests} read requests to verify ` +
      `(${small.checkedByOid} by listing, ${small.checkedByDownload} downloaded), ` +
      `${small.maxListenersWarnings} MaxListenersExceeded warnings`,
  );

  const result = {
    verifyRequestsPer1000SmallFiles: small.verifyRequests,
    maxListenersWarnings: small.maxListenersWarnings,
    pushMBps: Number((totalBytes / MIB / (pushMs / 1000)).toFixed(1)),
    verifyOverheadRatio: Number((verifyMs / (pushMs - verifyMs)).toFixed(4)),
    pullMBps: Number((totalBytes / MIB / (pullMs / 1000)).toFixed(1)),
    crashPoints: crash.length,
    crashViolations: crash.reduce((a, r) => a + r.violations.length, 0),
    pushPeakRssMiBOverBaseline: worstRss('push'),
    pullPeakRssMiBOverBaseline: worstRss('pull'),
    peakRssMiBOverBaselineByStore: Object.fromEntries(
      (['hub', 'dir'] as const).map((k) => [
        k,
        { push: rssByStore[k].push.overBaselineMiB, pull: rssByStore[k].pull.overBaselineMiB },
      ]),
    ),
    largeFileMiB: LARGE_MIB,
    dirPushOverCpSync: dirTp.dirPushOverCpSync,
    dirPushOverCpSyncFiles: dirTp.dirPushOverCpSyncFiles,
    hubPushOverPlainPut: hubTp.hubPushOverPlainPut,
    throughputEachRep: { dir: dirTp.eachRep, hub: hubTp.eachRep },
    checkpointMiB: Number((totalBytes / MIB).toFixed(2)),
    reps: REPS,
    pushMs: Math.round(pushMs),
    verifyMs: Number(verifyMs.toFixed(1)),
    pullMs: Math.round(pullMs),
    pushBreakdownMs: {
      hash: Math.round(median(pushes.map((p) => p.hashMs))),
      upload: Math.round(median(pushes.map((p) => p.uploadMs))),
      verify: Number(verifyMs.toFixed(1)),
      pointer: Math.round(median(pushes.map((p) => p.pointerMs))),
    },
    crash: crash.map((r) => ({
      store: r.kind,
      phase: r.phase,
      pointerAfterKill: r.pointerStepAfterKill,
      resumed: r.resumedStep,
      via: r.via,
      violations: r.violations,
    })),
    serverErrors: server.errors.length,
  };
  const outDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'hub-ckpt.json'), `${JSON.stringify(result, null, 2)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    const rows: Array<[string, string, string]> = [
      ['pushMBps', String(result.pushMBps), 'whole push: hash + upload + verify + pointer'],
      ['verifyOverheadRatio', String(result.verifyOverheadRatio), 'target <= 0.15'],
      ['pullMBps', String(result.pullMBps), 'pullResume: verify + cold pull with sha256 checks'],
      [
        'crashPoints',
        String(result.crashPoints),
        '10 SIGKILLs + 4 faults (lost commit reply x2, corruption at rest x2) + 3 races (two writers x2 stores, ' +
          'Hub outage); target >= 5',
      ],
      ['crashViolations', String(result.crashViolations), 'target 0'],
      [
        'verifyRequestsPer1000SmallFiles',
        String(result.verifyRequestsPer1000SmallFiles),
        'reads (tree, paths-info, resolve) by the verify of a push of 1000 small files; target <= 10',
      ],
      ['maxListenersWarnings', String(result.maxListenersWarnings), 'during that push; target 0'],
      [
        'pushPeakRssMiBOverBaseline',
        String(result.pushPeakRssMiBOverBaseline),
        `push of one ${LARGE_MIB} MiB file, child's VmHWM over its baseline, worse of hub and dir; target <= 128`,
      ],
      [
        'pullPeakRssMiBOverBaseline',
        String(result.pullPeakRssMiBOverBaseline),
        `cold pull of the same file (download + sha256), worse of hub and dir; target <= 128`,
      ],
      [
        'dirPushOverCpSync',
        String(result.dirPushOverCpSync),
        `dir push / cp -r && sync, same 64 MiB, same disk, median of ${REPS} side by side; target >= 0.7`,
      ],
      ['dirPushOverCpSyncFiles', String(result.dirPushOverCpSyncFiles), 'the same against cp -r && sync <files>'],
      [
        'hubPushOverPlainPut',
        String(result.hubPushOverPlainPut),
        `Hub push / one plain fetch PUT of as many bytes to the same server, median of ${REPS}; target >= 0.5`,
      ],
    ];
    log('');
    log('| metric | value | note |');
    log('|---|---|---|');
    for (const [k, v, n] of rows) log(`| ${k} | ${v} | ${n} |`);
  }
} finally {
  await server.close();
  tmp.cleanup();
}
