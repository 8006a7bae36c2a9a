// A preempted VM through the real bin: soup, its watchdog and its trainer are SIGKILLed at once (no release of
// the store's lease), and the next session runs on another host (a uts namespace with another hostname). It
// waits out the lease (an 8 s TTL here) and resumes, or takes the lease over at once by its id. The Node trainer
// always; the PyTorch twin where `$PYTHON -c "import torch"` works (skipped with the reason printed elsewhere).
import { processTree, startHubServer, type HubServer, runNode, runProcess, useTempDir } from '@soup/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  nodeTrainerArgv,
  runJsonOf,
  SOUP_BIN,
  soupEnv,
  soupRunUntil,
  torchMissing,
  torchTrainerArgv,
} from '../test/run-helpers';

const missing = await torchMissing();
if (missing) process.stdout.write(`lease-preempt.e2e.test.ts: PyTorch twin skipped: ${missing} (or set PYTHON)\n`);

let server: HubServer;
beforeAll(async () => {
  server = await startHubServer();
});
afterAll(async () => {
  await server?.close();
  expect(server.errors).toEqual([]);
});

/** Runs `soup run` on another host: hostname other-host in a new uts namespace. */
function soupRunElsewhere(cwd: string, options: string[], argv: string[], env: NodeJS.ProcessEnv) {
  const soup = [process.execPath, SOUP_BIN, 'run', ...options, '--', ...argv];
  return runProcess('unshare', ['--uts', 'sh', '-c', 'hostname other-host && exec "$0" "$@"', ...soup], {
    cwd,
    env,
    timeoutMs: 90_000,
  });
}

/** Session 1 killed at once (soup, watchdog, trainer) after its first push; session 2 on another host waits it out. */
async function preemptedThenResumed(kind: string, argv: string[]): Promise<void> {
  const cwd = useTempDir();
  const repo = kind === 'dir' ? 'file://store' : `preempt/wait-${Math.random().toString(36).slice(2, 8)}`;
  const env = soupEnv(cwd, { HF_TOKEN: server.token, HF_ENDPOINT: server.url });
  const opts = ['--repo', repo, '--output-dir', 'out', '--batch-size', '4', '--settle', '300ms', '--poll', '100ms'];
  // Slow steps: at its first push the first session still trains (soup, watchdog, trainer all alive). An 8 s
  // lease: still live once the next soup has started, even on a loaded machine.
  const a = await soupRunUntil(
    cwd,
    [...opts, '--lease-ttl', '8s'],
    argv,
    { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '1500' },
    /pushed ckpt\/checkpoint-\d+/,
  );
  const tree = processTree(a.child.pid ?? 0);
  expect(tree.length, 'soup, its watchdog and its trainer').toBeGreaterThanOrEqual(3);
  for (const pid of tree) process.kill(pid, 'SIGKILL');
  await a.exited;
  const b = await soupRunElsewhere(cwd, [...opts, '--lease-ttl', '8s'], argv, env);
  expect(b.code, b.stderr).toBe(EXIT_CODES.ok);
  expect(b.stdout + b.stderr).toMatch(/lease held by host \S+ \(pid \d+, run "[^"]+"\), expires in \d s; waiting/);
  const result = runJsonOf<{ status: string; start_step: number; final_step: number }>(b.stdout);
  expect(result).toMatchObject({ status: 'finished', final_step: 12 });
  expect(result.start_step).toBeGreaterThan(0);
}

describe('[slow] a preempted VM does not lock the store out', { timeout: 120_000 }, () => {
  it.each(['dir', 'hub'])(
    'soup, its watchdog and its trainer killed at once; the next session on another host waits out the ' +
      '8 s lease, then resumes and completes (%s)',
    (kind) => preemptedThenResumed(kind, nodeTrainerArgv({ maxSteps: 12, saveSteps: 2 })),
  );

  it.skipIf(missing !== null)('the same with the PyTorch trainer (dir)', () =>
    preemptedThenResumed('dir', torchTrainerArgv({ maxSteps: 12, saveSteps: 2 })),
  );

  it("--take-over-lease <id> from the exit-11 message takes a dead VM's 60 s lease at once (dir)", async () => {
    const cwd = useTempDir();
    const env = soupEnv(cwd);
    const opts = ['--repo', 'file://store', '--output-dir', 'out', '--batch-size', '4', '--settle', '300ms'];
    const argv = nodeTrainerArgv({ maxSteps: 12, saveSteps: 2 });
    const a = await soupRunUntil(
      cwd,
      [...opts, '--poll', '100ms', '--lease-ttl', '60s'],
      argv,
      { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '1500' },
      /pushed ckpt\/checkpoint-\d+/,
    );
    for (const pid of processTree(a.child.pid ?? 0)) process.kill(pid, 'SIGKILL');
    await a.exited;
    const refused = await soupRunElsewhere(cwd, [...opts, '--no-wait-lease'], argv, env);
    expect(refused.code, refused.stderr).toBe(EXIT_CODES.storeBusy);
    expect(refused.stderr).toMatch(/expires in \d+ s, at /);
    const id = /--take-over-lease ([0-9a-f]{16})/.exec(refused.stderr)?.[1] ?? '';
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    const status = await runNode([SOUP_BIN, 'ckpt', 'status', '--repo', 'file://store'], { cwd, env });
    expect(status.stdout).toMatch(new RegExp(`lease {8}${id}: host \\S+, pid \\d+, run \\S+, until `));
    const b = await soupRunElsewhere(cwd, [...opts, '--take-over-lease', id], argv, env);
    expect(b.code, b.stderr).toBe(EXIT_CODES.ok);
    // At once: the lease it overrides still had most of its 60 s.
    const left =
      /taking over lease [0-9a-f]{16} of host \S+, pid \d+, run "[^"]+", since \S+ \(expires in (\d+) s\)/.exec(
        b.stdout + b.stderr,
      );
    expect(left?.[0], b.stderr).toContain(`taking over lease ${id} of host`);
    expect(Number(left?.[1])).toBeGreaterThan(20);
  });
});
