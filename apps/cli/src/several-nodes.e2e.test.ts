// Several nodes on localhost through the real bin: one `soup run` per node, each in its own uts namespace (another
// hostname), one directory store, one shared nodes folder. Node 1 runs as another user (nobody) in a store every user
// may write to, so the owner of each store file says which node wrote it.
import { type ChildResult, useTempDir } from '@soup/test-utils';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { NOBODY, owners, startSoupNode } from '../test/node-helpers';
import { nodeTrainerArgv, pointerOf, readJson, soupEnv, trainerPid } from '../test/run-helpers';

/** The newest `checkpoint-<step>` folder with a trainer_state.json in `dir`. */
function newestSaved(dir: string): number {
  const steps = readdirSync(dir)
    .map((n) => /^checkpoint-(\d+)$/.exec(n))
    .filter((m) => m !== null && existsSync(join(dir, m[0], 'trainer_state.json')))
    .map((m) => Number(m![1]));
  return Math.max(-1, ...steps);
}

describe('[slow] several nodes: one writer, one session end', { timeout: 60_000 }, () => {
  it('SIGTERM on node 1 only: both exit 75; node 0 pushed the step both reached; node 1 wrote nothing', async () => {
    const cwd = useTempDir();
    chmodSync(cwd, 0o777);
    // Each node's trainer trains alone (no WORLD_SIZE: the example trainers' data parallel mode would tie them in
    // lock step); what is tested here is the supervisors: node 0 pushes only what node 1 also reached.
    const env = soupEnv(cwd);
    const common = ['--repo', 'file://store', '--batch-size', '4', '--settle', '300ms', '--poll', '100ms'];
    const nodeOpts = [...common, '--nnodes', '2', '--nodes-dir', 'nodes', '--grace', '20s'];
    const argv = nodeTrainerArgv({ maxSteps: 200, saveSteps: 1 });
    // Node 1 trains slower: node 0 must push only what node 1 has also reached.
    const n0 = await startSoupNode({
      cwd,
      rank: 0,
      options: [...nodeOpts, '--node-rank', '0', '--output-dir', 'out0'],
      argv,
      env: { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '100' },
      marker: /leading session/,
    });
    const n1 = await startSoupNode({
      cwd,
      rank: 1,
      options: [...nodeOpts, '--node-rank', '1', '--output-dir', 'out1'],
      argv,
      env: { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '400' },
      asNobody: true,
      marker: /launched trainer/,
    });
    // Every lease the store shows while the nodes run (id and host).
    const leases = new Set<string>();
    let ended: [ChildResult, ChildResult] | null = null;
    const both = Promise.all([n0.exited, n1.exited]).then((r) => (ended = r));
    let pushedSeen = false;
    while (ended === null) {
      const raw = existsSync(join(cwd, 'store', 'soup-lease.json'))
        ? readFileSync(join(cwd, 'store', 'soup-lease.json'), 'utf8')
        : null;
      const lease = raw === null ? null : (JSON.parse(raw) as { id: string; host: string });
      if (lease !== null) leases.add(`${lease.id} ${lease.host}`);
      if (!pushedSeen && (pointerOf(join(cwd, 'store'))?.step ?? 0) >= 2) {
        pushedSeen = true;
        n1.child.kill('SIGTERM');
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const [r0, r1] = (await both) as [ChildResult, ChildResult];
    expect(r1.code, r1.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r0.code, r0.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r0.stdout).toMatch(/session ending \(node 1 ended the session \(signal SIGTERM\)\): sending SIGTERM/);
    expect(r1.stdout).toMatch(/following node 0 \(host node-0, pid \d+\); no lease, no pushes/);
    expect(r1.stdout + r1.stderr).not.toMatch(/soup: pushed|lease held|taking over lease/);

    // The pointer is at the step node 1 stopped at (node 0 trained past it): the newest both reached.
    const pointer = pointerOf(join(cwd, 'store'))!;
    const reached1 = newestSaved(join(cwd, 'out1'));
    expect(pointer.step).toBe(reached1);
    expect(newestSaved(join(cwd, 'out0'))).toBeGreaterThan(pointer.step);
    expect(existsSync(join(cwd, 'out0', `checkpoint-${pointer.step}`))).toBe(true);

    // One run, one lease (node 0's, released at the end), and every store file written by node 0 (root), though
    // node 1 (nobody) could have written there.
    const record = readJson<{ run: string }>(join(cwd, 'store', 'soup_run.json'));
    expect(record.run).toBe(pointer.run);
    for (const d of readdirSync(join(cwd, 'store', 'ckpt')))
      expect(readJson<{ run: string }>(join(cwd, 'store', 'ckpt', d, 'manifest.json')).run).toBe(pointer.run);
    expect([...leases].map((l) => l.split(' ')[1])).toEqual(['node-0']);
    expect(existsSync(join(cwd, 'store', 'soup-lease.json'))).toBe(false);
    expect(statSync(join(cwd, 'store')).mode & 0o777).toBe(0o777);
    const files = owners(join(cwd, 'store'));
    expect(files.length).toBeGreaterThan(3);
    expect(files.filter((f) => f.uid !== 0)).toEqual([]);
    // Node 1 did write its own notes (so it could write as nobody): its hello and exit.
    const notes = owners(join(cwd, 'nodes')).filter((f) => f.uid === NOBODY);
    expect(notes.map((f) => f.path.split('/').pop()).sort()).toEqual([
      'end-1.json',
      'exit-1.json',
      'hello-1.json',
      'progress-1.json',
    ]);
  });

  it('SLURM: USR1 on node 0 ends both; node 0 pushes, then requeues once; the follower takes no lease', async () => {
    const cwd = useTempDir();
    const bin = join(cwd, 'bin');
    mkdirSync(bin);
    // A fake scontrol: appends its argv, and the time in ns, to a file.
    writeFileSync(
      join(bin, 'scontrol'),
      `#!/bin/sh\necho "$(date +%s%N) $*" >> "${join(cwd, 'scontrol.log')}"\necho "requeued $2"\n`,
      { mode: 0o755 },
    );
    const env = soupEnv(cwd, { PATH: `${bin}:${process.env.PATH}`, SLURM_JOB_ID: '4242', SLURM_NNODES: '2' });
    const opts = ['--repo', 'file://store', '--batch-size', '4', '--settle', '300ms', '--poll', '100ms'];
    const nodeOpts = [...opts, '--nodes-dir', 'nodes', '--grace', '20s', '--requeue'];
    const argv = nodeTrainerArgv({ maxSteps: 200, saveSteps: 1 });
    const slow = { SOUP_EXAMPLE_STEP_DELAY_MS: '150' };
    // Node 1 starts once node 0 holds the lease: a second writer on this host would be refused at once (exit 11).
    const n0 = await startSoupNode({
      cwd,
      rank: 0,
      options: [...nodeOpts, '--output-dir', 'out0'],
      argv,
      env: { ...env, ...slow, SLURM_NODEID: '0' },
      marker: /launched trainer/,
    });
    const n1 = await startSoupNode({
      cwd,
      rank: 1,
      options: [...nodeOpts, '--output-dir', 'out1'],
      argv,
      env: { ...env, ...slow, SLURM_NODEID: '1' },
      marker: /launched trainer/,
    });
    while ((pointerOf(join(cwd, 'store'))?.step ?? 0) < 2) await new Promise((r) => setTimeout(r, 50));
    n0.child.kill('SIGUSR1');
    const [r0, r1] = await Promise.all([n0.exited, n1.exited]);
    expect(r0.code, r0.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r1.code, r1.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r0.stdout).toMatch(/node 0 of 2 \(slurm\): leading session/);
    expect(r1.stdout).toMatch(/node 1 of 2 \(slurm\): following node 0/);
    expect(r1.stdout + r1.stderr).not.toMatch(/soup: pushed|lease held|taking over lease|requeue/);
    expect(r1.stdout).toMatch(/session ending \(node 0 ended the session \(signal SIGUSR1\)\)/);

    // Exactly one requeue, for the job, after the last push moved the pointer.
    const calls = readFileSync(join(cwd, 'scontrol.log'), 'utf8').trim().split('\n');
    expect(calls.map((c) => c.split(' ').slice(1).join(' '))).toEqual(['requeue 4242']);
    const pointerMtimeNs = statSync(join(cwd, 'store', 'latest.json'), { bigint: true }).mtimeNs;
    expect(BigInt(calls[0]!.split(' ')[0]!)).toBeGreaterThan(pointerMtimeNs);
    const lines = r0.stdout.split('\n');
    const lastPush = lines.findLastIndex((l) => /soup: pushed ckpt\/checkpoint-\d+/.test(l));
    const requeued = lines.findIndex((l) => l.includes('soup: requeued SLURM job 4242: scontrol requeue 4242'));
    expect(lastPush).toBeGreaterThan(-1);
    expect(requeued).toBeGreaterThan(lastPush);
    expect(lines[requeued]).toBe('soup: requeued SLURM job 4242: scontrol requeue 4242 (exit 0: requeued 4242)');
  });

  it("node 0's verdict: complete when every trainer exited 0; a follower lost is unknown (75)", async () => {
    const cwd = useTempDir();
    const env = soupEnv(cwd);
    const opts = [
      '--repo',
      'file://store',
      '--batch-size',
      '4',
      '--settle',
      '300ms',
      '--poll',
      '100ms',
      '--nnodes',
      '2',
    ];
    const argv = nodeTrainerArgv({ maxSteps: 4, saveSteps: 2 });
    // Two runs side by side, each with its own store and nodes folder: `a` runs to its end on both nodes; in `b`,
    // node 1 (soup and its trainer) is killed outright, so node 0 trains to its end, waits --grace for node 1's exit
    // note, and does not call the run complete.
    const run = (rank: number, name: string, e: NodeJS.ProcessEnv, grace: string) =>
      startSoupNode({
        cwd,
        rank,
        options: [...opts, '--grace', grace, '--node-rank', String(rank), '--repo', `file://store-${name}`].concat([
          '--nodes-dir',
          `nodes-${name}`,
          '--output-dir',
          `${name}${rank}`,
        ]),
        argv,
        env: e,
        marker: /launched trainer/,
      });
    const slow = { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '200' };
    // Trainers that train apart (no collective) end apart: `a` waits for node 1's longer than `b` can.
    const [a0, b0] = await Promise.all([run(0, 'a', env, '20s'), run(0, 'b', slow, '1s')]);
    const [a1, b1] = await Promise.all([run(1, 'a', env, '20s'), run(1, 'b', slow, '1s')]);
    process.kill(trainerPid(b1.output), 'SIGKILL');
    b1.child.kill('SIGKILL');
    const [r0, r1, r] = await Promise.all([a0.exited, a1.exited, b0.exited]);
    expect([r0.code, r1.code], r0.stderr + r1.stderr).toEqual([EXIT_CODES.ok, EXIT_CODES.ok]);
    expect(r1.stdout).toMatch(/node 0 judged the run complete at step 4/);
    expect(pointerOf(join(cwd, 'store-a'))).toMatchObject({ step: 4, terminal: true });

    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r.stderr).toMatch(/no exit note from node 1 within --grace: its trainer's exit is unknown/);
    expect(r.stdout).toMatch(/segment saved \(node 1's trainer exit is unknown \(no exit note within --grace\)\)/);
    expect(pointerOf(join(cwd, 'store-b'))?.terminal ?? false).toBe(false);
  });
});
