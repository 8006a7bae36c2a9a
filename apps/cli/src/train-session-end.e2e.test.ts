// Acceptance (issue 12, `soup train` part): the end of a session loses at most the step that was
// running. A real `soup train` child (the built bin) is SIGTERMed at a random step, ends its session
// with --time-limit, or gets a second signal; the store's pointer names exactly the step saved, and the
// resumed run (--resume auto, after wiping the disk) ends bit-identical to an uninterrupted run (threads 1).
import { HubStore } from '@soup/hub-ckpt';
import { makeTempDir, startHubServer, useTempDir, type HubServer } from '@soup/test-utils';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { assetPath } from './_assets';
import type { SessionResult as RunJson } from '@soup/supervisor';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
// 10 steps: the non-TTY progress prints one `train: N/10` line per step (every 10 %), after its first second.
const HORIZON = 10;
const BATCH = 32;
const MAX_LENGTH = 128; // ~0.4 s a step on one thread: time to see a step and signal the next

function configText(extra = '', horizon = HORIZON, maxLength = MAX_LENGTH): string {
  return `base: soup/session-end-gpt
model: {vocab_size: 256, d_model: 128, n_heads: 4, n_layers: 4, d_ff: 512}
data:
  train: ${assetPath('corpus/train.txt')}
  val: ${assetPath('corpus/val.txt')}
  max_length: ${maxLength}
training:
  steps: ${horizon}
  batch_size: ${BATCH}
  micro_batch_size: ${BATCH}
  lr: 0.003
  warmup_steps: 2
  threads: 1
  val_batches: 2
${extra}`;
}

let server: HubServer;
let referenceSha = '';
let referenceRun = '';
const cleanups: (() => void)[] = [];

interface Soup {
  child: ChildProcess;
  out: { stdout: string; stderr: string };
  /** Resolves once `re` matches the stream so far (rejects if the child exits first). */
  waitFor(stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function soup(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Soup {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      NO_COLOR: '1',
      HF_TOKEN: server.token,
      HF_ENDPOINT: server.url,
      SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  try {
    onTestFinished(() => {
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  } catch {
    // beforeAll: the 240 s timer is the guard
  }
  const out = { stdout: '', stderr: '' };
  const waiters: (() => void)[] = [];
  const poke = (): void => {
    for (const w of waiters) w();
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out.stdout += d;
    poke();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out.stderr += d;
    poke();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) =>
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        poke();
        resolve({ code, signal, ...out });
      }),
  );
  const waitFor = (stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = re.exec(out[stream]);
        if (m) resolve(m);
        else if (child.exitCode !== null || child.signalCode !== null)
          reject(new Error(`soup exited before ${String(re)} on ${stream}:\n${out.stdout}\n${out.stderr}`));
      };
      waiters.push(check);
      check();
    });
  return { child, out, waitFor, exited };
}

function runJson(stdout: string): RunJson {
  const line = stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
  if (!line) throw new Error(`no RUN_JSON line in:\n${stdout}`);
  return JSON.parse(line.slice('RUN_JSON '.length)) as RunJson;
}

async function pointer(repo: string): Promise<Record<string, unknown> | null> {
  const raw = await new HubStore({ repo, token: server.token, endpoint: server.url }).readFile({ path: 'latest.json' });
  return raw === null ? null : (JSON.parse(new TextDecoder().decode(raw)) as Record<string, unknown>);
}

async function remoteState(repo: string, step: number): Promise<Record<string, unknown>> {
  const raw = await new HubStore({ repo, token: server.token, endpoint: server.url }).readFile({
    path: `ckpt/checkpoint-${step}/trainer_state.json`,
  });
  return JSON.parse(new TextDecoder().decode(raw!)) as Record<string, unknown>;
}

const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');
/** Steps of the `train: N/10` progress lines, in order. */
const progressSteps = (stderr: string): number[] =>
  [...stderr.matchAll(/^soup: train: (\d+)\/\d+ \(/gm)].map((m) => Number(m[1]));

/** Session 2: wipe the disk, resume from the store, run to the horizon; returns the final weights' sha256. */
async function resume(
  cwd: string,
  repo: string,
  fromStep: number | null,
  extra: string[] = [],
  horizon = HORIZON,
  run = referenceRun,
  out = 'out',
): Promise<string> {
  rmSync(join(cwd, out), { recursive: true, force: true });
  const r = await soup(
    ['train', '-c', 'soup.yaml', '--repo', repo, '--output-dir', out, '--resume', 'auto', ...extra],
    cwd,
  ).exited;
  expect(r.code, r.stderr).toBe(0);
  if (fromStep === null) expect(r.stdout).toContain('fresh run');
  else expect(r.stdout).toContain(`resuming from ckpt/checkpoint-${fromStep} at step ${fromStep}`);
  expect(runJson(r.stdout)).toMatchObject({
    final_step: horizon,
    status: 'finished',
    final_pushed: true,
    session_end: null,
    start_step: fromStep ?? 0,
    run,
  });
  return sha(join(cwd, out, 'final', 'model.safetensors'));
}

beforeAll(async () => {
  server = await startHubServer();
  // The uninterrupted run every scenario is compared with.
  const ref = makeTempDir('soup-i12-ref-');
  cleanups.push(ref.cleanup);
  const cwd = ref.dir;
  writeFileSync(join(cwd, 'soup.yaml'), configText());
  const r = await soup(['train', '-c', 'soup.yaml', '--repo', 'e2e/reference', '--output-dir', 'out'], cwd).exited;
  if (r.code !== 0) throw new Error(`reference run failed (${r.code}):\n${r.stderr}`);
  referenceSha = sha(join(cwd, 'out', 'final', 'model.safetensors'));
  referenceRun = runJson(r.stdout).run;
}, 240_000);
afterAll(async () => {
  await server?.close();
  for (const c of cleanups) c();
});

describe('[slow] soup train: the end of a session', { timeout: 300_000 }, () => {
  it(
    'SIGTERM at a random step: the step running then is saved and pushed, exit 75; the resumed run is ' +
      'bit-identical',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), configText());
      const repo = 'e2e/sigterm';
      const k = 3 + Math.floor(Math.random() * 4); // 3..6 of 10
      const s = soup(
        ['train', '-c', 'soup.yaml', '--repo', repo, '--output-dir', 'out', '--push-every-steps', '4'],
        cwd,
      );
      await s.waitFor('stderr', new RegExp(`^soup: train: ([${k}-9]|10)/${HORIZON} \\(`, 'm'));
      const seenAtSignal = Math.max(...progressSteps(s.out.stderr));
      s.child.kill('SIGTERM');
      const r = await s.exited;
      expect(r.code, `k=${k}\n${r.stdout}\n${r.stderr}`).toBe(EXIT_CODES.segmentSaved);

      // Which step was saved: the one running when the signal arrived (or the last one completed).
      const rj = runJson(r.stdout);
      const saved = rj.final_step!;
      expect(saved, `k=${k}`).toBeGreaterThanOrEqual(seenAtSignal);
      expect(saved).toBeLessThan(HORIZON);
      expect(rj).toMatchObject({
        status: 'segment',
        segment_stop: true,
        val_skipped: true,
        final_pushed: false,
        tokens_consumed: saved * BATCH * MAX_LENGTH,
      });
      expect(rj.session_end).toMatchObject({ reason: 'SIGTERM', saved_step: saved % 4 === 0 ? null : saved });
      expect(rj.pushed_steps.at(-1)).toBe(saved);
      // No step began after the signal was handled. ONNX Runtime runs a step off the main thread, so
      // soup's notice comes either after the saved step's progress line, or while that step was still
      // computing (its line then follows the notice): the saved step is the last one shown before the
      // notice, or the one after it — and no step beyond it ever appears.
      const notice = r.stderr.indexOf('soup: SIGTERM:');
      expect(notice).toBeGreaterThan(0);
      const shownBefore = Math.max(...progressSteps(r.stderr.slice(0, notice)));
      expect([shownBefore, shownBefore + 1]).toContain(saved);
      expect(progressSteps(r.stderr.slice(notice)).filter((n) => n > saved)).toEqual([]);
      expect(r.stdout).toContain(`session end (SIGTERM) at step ${saved}: `);
      // The store: the pointer names exactly that step, whose files say so.
      expect(await pointer(repo)).toMatchObject({
        step: saved,
        path_in_repo: `ckpt/checkpoint-${saved}`,
        terminal: false,
        run: referenceRun,
      });
      expect(await remoteState(repo, saved)).toMatchObject({
        step: saved,
        tokens_consumed: saved * BATCH * MAX_LENGTH,
      });

      expect(await resume(cwd, repo, saved)).toBe(referenceSha);
      console.info(
        `SIGTERM: picked step ${k}, progress showed ${seenAtSignal} when signalled, saved and pointed step ${saved}` +
          `; resumed sha256 ${referenceSha.slice(0, 16)}… = reference`,
      );
    },
  );

  it(
    '--time-limit (soup.yaml training.time_limit, or the flag, which wins): the step completed is ' +
      'saved, exit 75; resume is bit-identical',
    async () => {
      // The limit is counted from soup's start, so on a loaded machine start-up alone may use a short one.
      // A session with no step is checked separately below (deterministically, with 1 ms); here the
      // limit doubles (4, 8, 16 s; a fresh store each time) until a session ran steps, which is required.
      // Steps of half the tokens (about 0.2 s): no signal has to land within a step here, and the 40 of the
      // reference and the resumed run were most of this file's time.
      const horizon = 40;
      const maxLength = MAX_LENGTH / 2;
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), configText('', horizon, maxLength));
      const ref = await soup(
        ['train', '-c', 'soup.yaml', '--repo', 'e2e/time-limit-reference', '--output-dir', 'ref'],
        cwd,
      ).exited;
      expect(ref.code, ref.stderr).toBe(0);
      const refSha = sha(join(cwd, 'ref', 'final', 'model.safetensors'));
      const run = runJson(ref.stdout).run;

      let limitS = 4;
      let repo = '';
      let r: Awaited<ReturnType<typeof soup>['exited']>;
      let rj: RunJson;
      for (;;) {
        writeFileSync(join(cwd, 'soup.yaml'), configText(`  time_limit: ${limitS}s\n`, horizon, maxLength));
        repo = `e2e/time-limit-${limitS}`;
        r = await soup(
          ['train', '-c', 'soup.yaml', '--repo', repo, '--output-dir', `out-${limitS}`, '--push-every-steps', '1000'],
          cwd,
        ).exited;
        expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
        rj = runJson(r.stdout);
        expect(rj.session_end).toMatchObject({ reason: 'time-limit' });
        if (rj.final_step! > 0 || limitS >= 16) break;
        console.info(
          `--time-limit ${limitS}s: start-up used it all on this machine (no step ran); trying ${limitS * 2}s`,
        );
        limitS *= 2;
      }
      const saved = rj.final_step!;
      expect(rj.run).toBe(run); // time_limit is not part of the run fingerprint
      expect(saved, r.stderr).toBeGreaterThan(0);
      expect(saved).toBeLessThan(horizon);
      expect(rj.session_end).toMatchObject({ reason: 'time-limit', saved_step: saved });
      expect(rj.session_end!.after_s).toBeGreaterThanOrEqual(limitS);
      expect(r.stdout).toContain(
        `session end (--time-limit ${limitS}.0s reached) at step ${saved}: saving checkpoint-${saved} and pushing it`,
      );
      expect(await pointer(repo)).toMatchObject({
        step: saved,
        path_in_repo: `ckpt/checkpoint-${saved}`,
        terminal: false,
        run,
      });
      expect(await remoteState(repo, saved)).toMatchObject({
        step: saved,
        tokens_consumed: saved * BATCH * maxLength,
      });
      // Session 2: --time-limit 1h overrides the file's limit and runs to the horizon.
      expect(await resume(cwd, repo, saved, ['--time-limit', '1h'], horizon, run, `out-${limitS}`)).toBe(refSha);
      console.info(
        `--time-limit ${limitS}s: session ended after ${rj.session_end!.after_s} s at step ${saved} of ${horizon}` +
          `; resumed run bit-identical`,
      );

      // A limit already spent when training would start: no step runs, nothing is pushed, still exit 75.
      const spent = await soup(
        ['train', '-c', 'soup.yaml', '--repo', 'e2e/time-limit-spent', '--output-dir', 'spent', '--time-limit', '1ms'],
        cwd,
      ).exited;
      expect(spent.code, spent.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(runJson(spent.stdout)).toMatchObject({
        final_step: 0,
        session_end: { reason: 'time-limit', saved_step: null },
        pushed_steps: [],
      });
      expect(spent.stdout).toContain('no step was run this session');
      expect(Object.keys(server.files('e2e/time-limit-spent') ?? {})).toEqual([]); // nothing pushed, not even the repo

      const bad = await soup(
        ['train', '-c', 'soup.yaml', '--repo', repo, '--output-dir', 'out', '--time-limit', '8 hours'],
        cwd,
      ).exited;
      expect(bad.code).toBe(EXIT_CODES.usage);
      expect(bad.stderr).toBe(
        "soup: option '--time-limit <duration>' argument '8 hours' is invalid. expected a duration like 8h45m, 90m, " +
          '30s, 500ms or 1d (a bare number is seconds), got "8 hours" (see: soup train --help)\n',
      );
    },
  );

  it(
    'a second signal quits at once (exit 130) while the session-end push waits; the pointer stays put ' +
      'and the next session still ends bit-identical',
    async () => {
      const cwd = useTempDir();
      writeFileSync(join(cwd, 'soup.yaml'), configText());
      const repo = 'e2e/second-signal';
      // No push before the session end (push every 100 steps), so the only push is the session end's.
      const s = soup(
        ['train', '-c', 'soup.yaml', '--repo', repo, '--output-dir', 'out', '--push-every-steps', '100'],
        cwd,
      );
      await s.waitFor('stderr', new RegExp(`^soup: train: [3-9]/${HORIZON} \\(`, 'm'));
      // Every commit is refused with 429 "retry in 30 s": the session-end push hangs in its retry wait.
      server.setFaults({ commit429: { count: 1000, retryAfterS: 30 } });
      onTestFinished(() => server.setFaults({}));
      s.child.kill('SIGINT');
      const m = await s.waitFor('stdout', /session end \(SIGINT\) at step (\d+): saving checkpoint-\d+ and pushing it/);
      await s.waitFor('stderr', /hub: POST \S+ answered 429/); // the push is waiting on the Hub
      s.child.kill('SIGTERM');
      const r = await s.exited;
      expect(r.code, r.stderr).toBe(EXIT_CODES.interrupted);
      expect(r.stderr).toContain('soup: SIGTERM again: quitting now (exit 130)');
      expect(r.stdout).not.toContain('RUN_JSON');
      expect(await pointer(repo)).toBeNull(); // the pointer never moved to an unverified checkpoint
      server.setFaults({});
      expect(Number(m[1])).toBeGreaterThanOrEqual(3);
      expect(await resume(cwd, repo, null)).toBe(referenceSha);
      expect(existsSync(join(cwd, 'out', 'final'))).toBe(true);
    },
  );
});
