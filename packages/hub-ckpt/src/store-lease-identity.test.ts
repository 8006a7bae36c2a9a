// The lease's holder identity across a preempted VM (another host), a restarted container (pid 1 again) and
// a pid namespace: real child processes under `unshare`, on both stores.
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runProcess, spawnUntil, type ChildResult } from '@soup/test-utils';
import { LeaseHeldError } from './errors';
import { acquireLease, LEASE_PATH, type LeaseInfo } from './store-lease';
import { makeTestStore, STORE_KINDS, type TestStore } from './_test-helpers';

const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
/**
 * A session taking the store's lease (the built package, as a user runs it). SOUP_LEASE_MODE hold: take it, renew
 * it, print `HELD {lease}` and run until killed; take: take it once (printing each log line), print `TOOK {lease}`
 * and release; refused: print `REFUSED <code> <message>`, exit 11. Also SOUP_LEASE_REPO, SOUP_LEASE_TTL_MS,
 * SOUP_LEASE_WAIT=1, SOUP_LEASE_TAKE_OVER=<id>.
 */
const LEASE_CHILD = `
import { acquireLease, HubCkptError, openStore } from '@soup/hub-ckpt';
const env = process.env;
const store = openStore({ repo: env.SOUP_LEASE_REPO, retry: { baseDelayMs: 20, maxDelayMs: 1000 } });
const t0 = Date.now();
const log = (line) => console.log('LOG +' + (Date.now() - t0) + 'ms ' + line);
try {
  const lease = await acquireLease({
    store,
    run: 'lease-test-run',
    ttlMs: Number(env.SOUP_LEASE_TTL_MS),
    wait: env.SOUP_LEASE_WAIT === '1',
    takeOver: env.SOUP_LEASE_TAKE_OVER ?? null,
    autoRenew: env.SOUP_LEASE_MODE === 'hold',
    logger: { info: log, warn: log },
  });
  if (env.SOUP_LEASE_MODE === 'hold') {
    console.log('HELD ' + JSON.stringify(lease.info));
    setInterval(() => undefined, 60_000);
  } else {
    console.log('TOOK ' + JSON.stringify({ ...lease.info, waitedMs: Date.now() - t0 }));
    await lease.release();
  }
} catch (err) {
  console.log('REFUSED ' + (err instanceof HubCkptError ? err.code : 'UNKNOWN') + ' ' + err.message);
  process.exit(11);
}
`;
/** Runs the rest of the argv on another host: a new uts namespace with hostname other-host. */
const OTHER_HOST = ['unshare', '--uts', 'sh', '-c', 'hostname other-host && exec "$0" "$@"'];
/** Runs the rest of the argv in a new pid namespace, as a pid (4000001) that names no process out here. */
const OTHER_PIDNS = [
  'unshare',
  '--pid',
  '--fork',
  '--kill-child',
  '--mount-proc',
  'sh',
  '-c',
  'echo 4000000 > /proc/sys/kernel/ns_last_pid && "$0" "$@"',
];
const NODE_CHILD = [process.execPath, '--input-type=module', '-e', LEASE_CHILD];

function childEnv(t: TestStore, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    SOUP_LEASE_REPO: t.kind === 'hub' ? t.location : pathToFileURL(t.location).href,
    ...(t.server ? { HF_ENDPOINT: t.server.url, HF_TOKEN: t.server.token } : {}),
    ...extra,
  };
}

/** A session that takes the lease and renews it until killed; resolves once it holds it. */
async function startHolder(t: TestStore, ttlMs: number, prefix: string[] = []) {
  const [file = '', ...args] = [...prefix, ...NODE_CHILD];
  const { child, output, exited } = await spawnUntil(file, args, /HELD .*\n/, {
    cwd: PKG_DIR,
    env: childEnv(t, { SOUP_LEASE_MODE: 'hold', SOUP_LEASE_TTL_MS: String(ttlMs) }),
    timeoutMs: 30_000,
  });
  const info = JSON.parse(/HELD (.*)\n/.exec(output)?.[1] ?? 'null') as LeaseInfo;
  return { child, info, exited };
}

/** A session that takes the lease once: exit 0 and `TOOK {lease}`, or exit 11 and `REFUSED <code> <message>`. */
async function take(t: TestStore, env: Record<string, string>, prefix: string[] = []) {
  const [file = '', ...args] = [...prefix, ...NODE_CHILD];
  const r: ChildResult = await runProcess(file, args, {
    cwd: PKG_DIR,
    env: childEnv(t, { SOUP_LEASE_MODE: 'take', SOUP_LEASE_TTL_MS: '3000', ...env }),
    timeoutMs: 30_000,
  });
  const took = /TOOK (.*)\n/.exec(r.stdout)?.[1];
  return { ...r, took: took === undefined ? null : (JSON.parse(took) as LeaseInfo & { waitedMs: number }) };
}

async function storedLease(t: TestStore): Promise<LeaseInfo | null> {
  const raw = await t.reopen().readFile({ path: LEASE_PATH });
  return raw === null ? null : (JSON.parse(new TextDecoder().decode(raw)) as LeaseInfo);
}

/** Writes a lease record as another session would have, with this host's boot id and pid namespace. */
async function writeRecord(t: TestStore, rec: Partial<LeaseInfo>): Promise<void> {
  const t0 = Date.now();
  const info: LeaseInfo = {
    format: 'soup-lease/1',
    id: 'feedc0de00000001',
    run: 'lease-test-run',
    host: hostname(),
    boot_id: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    pidns: readlinkSync('/proc/self/ns/pid'),
    pid: 1,
    start: null,
    since: new Date(t0).toISOString(),
    renewed_at: new Date(t0).toISOString(),
    expires_at: new Date(t0 + 60_000).toISOString(),
    ...rec,
  };
  if (!(await t.store.exists())) await t.store.create();
  await t.store.commit({
    message: 'test: a lease record',
    operations: [{ kind: 'put', path: LEASE_PATH, bytes: new TextEncoder().encode(JSON.stringify(info)) }],
  });
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.each(STORE_KINDS)('the lease holder across hosts and pid namespaces (%s store)', (kind) => {
  it(
    'a holder killed with its VM: the next session on another host waits ' + 'out its few seconds and takes it',
    async () => {
      const t = await makeTestStore(kind);
      // 6 s: long enough that the next session (a fresh node under unshare) still finds it live, short for a test.
      const holder = await startHolder(t, 6000);
      holder.child.kill('SIGKILL');
      await holder.exited;
      const waited = await take(t, { SOUP_LEASE_WAIT: '1' }, OTHER_HOST);
      expect(waited.code, waited.stdout + waited.stderr).toBe(0);
      expect(waited.stdout).toMatch(
        new RegExp(
          `lease held by host ${hostname()} \\(pid ${holder.info.pid}, run "lease-test-run"\\), expires in \\d s`,
        ),
      );
      expect(waited.took?.host).toBe('other-host');
      // At most what was left of the holder's TTL (6 s), never a default TTL's minutes.
      expect(waited.took?.waitedMs).toBeLessThan(7000);
    },
  );

  it(
    "--take-over-lease <id>: takes a dead VM's lease at once, naming what " + 'it overrides; another id is refused',
    async () => {
      const t = await makeTestStore(kind);
      const holder = await startHolder(t, 60_000);
      holder.child.kill('SIGKILL');
      await holder.exited;
      const refused = await take(t, {}, OTHER_HOST);
      expect(refused.code, refused.stdout + refused.stderr).toBe(11);
      expect(refused.stdout).toContain('REFUSED SOUP_HUB_CKPT_LEASE_HELD');
      expect(refused.stdout).toContain(`lease ${holder.info.id}, host ${hostname()}`);
      expect(refused.stdout).toMatch(/expires in (1 m )?\d+ s, at /);
      expect(refused.stdout).toContain(`--take-over-lease ${holder.info.id}`);
      const wrong = await take(t, { SOUP_LEASE_TAKE_OVER: '0123456789abcdef' }, OTHER_HOST);
      expect(wrong.code).toBe(11);
      expect(wrong.stdout).toContain('--take-over-lease 0123456789abcdef names another lease than this one');
      expect((await storedLease(t))?.id).toBe(holder.info.id);
      const took = await take(t, { SOUP_LEASE_TAKE_OVER: holder.info.id }, OTHER_HOST);
      expect(took.code, took.stdout + took.stderr).toBe(0);
      expect(took.stdout).toContain(
        `taking over lease ${holder.info.id} of host ${hostname()}, pid ${holder.info.pid}`,
      );
      expect(took.stdout).toMatch(/expires in (1 m )?\d+ s\), as asked/);
      expect(took.took?.host).toBe('other-host');
    },
  );

  it('pid 1 again (a restarted container): a lease of pid 1 with another start time is taken at once', async () => {
    const t = await makeTestStore(kind);
    const initStart = readFileSync('/proc/1/stat', 'utf8').split(') ')[1]?.split(' ')[19] ?? '';
    await writeRecord(t, { pid: 1, start: String(Number(initStart) + 12_345) });
    const warned: string[] = [];
    const lease = await acquireLease({
      store: t.reopen(),
      run: 'r',
      autoRenew: false,
      logger: { warn: (l) => warned.push(l) },
    });
    expect(lease.info.pid).toBe(process.pid);
    expect(warned.join('\n')).toContain(`pid 1 is now another process (started at ${initStart}`);
    await lease.release();
    // The same record with init's own start time: alive, refused.
    await writeRecord(t, { pid: 1, start: initStart });
    const alive = await acquireLease({ store: t.reopen(), run: 'r', autoRenew: false }).catch((e: unknown) => e);
    expect(alive).toBeInstanceOf(LeaseHeldError);
    expect((alive as Error).message).toContain('Its holder is alive on this host (pid 1 still runs)');
  });

  it(
    'a live holder in another pid namespace with the same hostname is not ' + 'taken over, even by a waiting session',
    async () => {
      const t = await makeTestStore(kind);
      const holder = await startHolder(t, 3000, OTHER_PIDNS);
      expect(holder.info.host).toBe(hostname());
      expect(holder.info.pid).toBe(4_000_001);
      expect(pidAlive(holder.info.pid)).toBe(false);
      const r = await take(t, { SOUP_LEASE_WAIT: '1' });
      expect(r.code, r.stdout + r.stderr).toBe(11);
      expect(r.stdout).toContain(`it runs in another pid namespace (${holder.info.pidns})`);
      expect(r.stdout).toContain('It was renewed while this session waited: its holder is alive.');
      expect((await storedLease(t))?.id).toBe(holder.info.id);
      // An older soup's record (no boot id, no pid namespace) of a dead pid here: unknown, so refused, not taken.
      await writeRecord(t, { boot_id: undefined, pidns: undefined, pid: 4_000_002 });
      const old = await acquireLease({ store: t.reopen(), run: 'r', autoRenew: false }).catch((e: unknown) => e);
      expect(old).toBeInstanceOf(LeaseHeldError);
      expect((old as Error).message).toContain('its lease names no boot id or pid namespace');
    },
  );
});
