// Two nodes sharing one output folder, where rank 0 alone writes (data parallel): rank 1's trainer exits before rank 0
// has saved the step both ranks reached. Node 1's exit note then names an older checkpoint, and node 0 must still
// push the agreed step: node 1's trainer reported reaching it. A rank 1 that reports no step leaves that agreement
// unknown: node 0 pushes only the older step every node is known to have reached, and says so.
import { type CheckpointStore, DirStore, type StoreCommitParams } from '@soup/hub-ckpt';
import { setTimeout as sleep } from 'node:timers/promises';
import { useTempDir } from '@soup/test-utils';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent, type SuperviseOptions } from './supervise';
import { ONE_BYTE_SAFETENSORS_JS } from './_test-trainer-js';

// argv: out rank nodes quiet. Both ranks stop at step 2 of 10 and exit 0, as after an agreed stop. Rank 0 waits for
// rank 1 to start (the rendezvous), saves checkpoint-1, then holds checkpoint-2 until node 1's exit note is in the
// nodes folder (the late save; 5 s at most). Rank 1 waits for checkpoint-1 (the step-1 exchange), prints its steps
// unless quiet, and exits 0 at once.
const TRAINER = `
const fs = require('node:fs'), path = require('node:path');
${ONE_BYTE_SAFETENSORS_JS}
const [out, rank, nodes, quiet] = [process.argv[1], Number(process.argv[2]), process.argv[3], process.argv[4] === 'quiet'];
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const waitFor = (ok) => { for (const until = Date.now() + 5000; !ok() && Date.now() < until; ) sleep(20); };
const save = (step) => {
  const d = path.join(out, 'checkpoint-' + step);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'model.safetensors'), st(step));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: step, max_steps: 10 }));
};
const exitNoteOf1 = () => fs.readdirSync(nodes).some((s) => fs.existsSync(path.join(nodes, s, 'exit-1.json')));
const up = path.join(out, '.rank-1-up');
if (rank === 0) {
  waitFor(() => fs.existsSync(up));
  console.log('step 1'); save(1);
  if (process.argv[4] !== 'late') { console.log('step 2'); waitFor(exitNoteOf1); save(2); }
} else {
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(up, '');
  waitFor(() => fs.existsSync(path.join(out, 'checkpoint-1', 'trainer_state.json')));
  if (process.argv[4] === 'late') {
    waitFor(() => fs.existsSync(path.join(out, '.soup-snapshots', 'checkpoint-1')));
    console.log('step 1');
  } else if (!quiet) console.log('step 1\\nstep 2');
}
`;

function node(cwd: string, rank: number, quiet: boolean | 'late', events: SuperviseEvent[]): SuperviseOptions {
  const nodes = join(cwd, 'nodes');
  const mode = quiet === 'late' ? 'late' : quiet ? 'quiet' : 'loud';
  return {
    argv: [process.execPath, '-e', TRAINER, '{output_dir}', String(rank), nodes, mode],
    store: new DirStore({ root: join(cwd, 'store') }),
    outputDir: join(cwd, 'out'),
    cwd,
    env: { PATH: process.env.PATH },
    signal: new AbortController().signal,
    settleMs: 200,
    pollMs: 50,
    pushNice: 0,
    graceMs: 5000,
    horizon: 10,
    nodeFlags: { nodeRank: rank, nnodes: 2 },
    nodesDir: nodes,
    onEvent: (e) => events.push(e),
  };
}

const pointerStep = (cwd: string): number | undefined => {
  const f = join(cwd, 'store', 'latest.json');
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as { step: number }).step : undefined;
};

describe('supervise(): two nodes, one shared output folder, rank 1 exits before rank 0 saves', {
  timeout: 20_000,
}, () => {
  it("node 1's trainer reported step 2: node 0 pushes step 2 though node 1's exit note names step 1", async () => {
    const cwd = useTempDir('soup-nodes-shared-');
    const e0: SuperviseEvent[] = [];
    const e1: SuperviseEvent[] = [];
    const [r0, r1] = await Promise.all([supervise(node(cwd, 0, false, e0)), supervise(node(cwd, 1, false, e1))]);
    const log = `${e0.map((e) => e.line).join('\n')}\n=====\n${e1.map((e) => e.line).join('\n')}`;
    const exit1 = JSON.parse(readFileSync(join(cwd, 'nodes', sessionOf(cwd), 'exit-1.json'), 'utf8'));
    expect(exit1.step, log).toBe(1); // the race: node 1's own watcher saw checkpoint-2 only after its trainer exited
    expect(pointerStep(cwd), log).toBe(2);
    expect(r0, log).toMatchObject({ outcome: 'segment-saved', step: 2 });
    expect(r1, log).toMatchObject({ outcome: 'segment-saved', step: 2 });
  });

  it('node 1 reported no step: node 0 pushes step 1 and says step 2 is not known to be every rank’s', async () => {
    const cwd = useTempDir('soup-nodes-shared-quiet-');
    const e0: SuperviseEvent[] = [];
    const [r0] = await Promise.all([supervise(node(cwd, 0, false, e0)), supervise(node(cwd, 1, true, []))]);
    const log = e0.map((e) => e.line).join('\n');
    expect(pointerStep(cwd), log).toBe(1);
    expect(r0, log).toMatchObject({ outcome: 'segment-saved', step: 1 });
    expect(log).toMatch(/node 1 is known to have reached step 1 only .*whether every rank reached step 2 is unknown/);
  });
});

describe("supervise(): a follower in node 0's output folder", { timeout: 20_000 }, () => {
  it("never clears node 0's snapshots: node 0's push in flight when node 1's session ends still points", async () => {
    const cwd = useTempDir('soup-nodes-shared-snapshots-');
    const snapshot1 = join(cwd, 'out', '.soup-snapshots', 'checkpoint-1');
    const dir = new DirStore({ root: join(cwd, 'store') });
    // Both ranks stop at step 1. Rank 1 exits only once node 0 has snapshotted checkpoint-1, and node 0's upload of it
    // waits for node 1's session to end (its exit note, then up to 1.5 s for the snapshot folder to go): node 1's
    // session ends while node 0 pushes the one step both reached.
    const store: CheckpointStore = Object.assign(Object.create(dir) as CheckpointStore, {
      kind: dir.kind,
      description: dir.description,
      async commit(p: StoreCommitParams) {
        if (p.message.startsWith('soup: upload ckpt/checkpoint-1 ')) {
          const nodes = join(cwd, 'nodes');
          const exitNote = () => readdirSync(nodes).some((x) => existsSync(join(nodes, x, 'exit-1.json')));
          for (const until = Date.now() + 5000; !exitNote() && Date.now() < until; ) await sleep(20);
          for (const until = Date.now() + 1500; existsSync(snapshot1) && Date.now() < until; ) await sleep(20);
        }
        return dir.commit(p);
      },
    });
    const e0: SuperviseEvent[] = [];
    const e1: SuperviseEvent[] = [];
    const [r0] = await Promise.all([
      supervise({ ...node(cwd, 0, 'late', e0), store }),
      supervise(node(cwd, 1, 'late', e1)),
    ]);
    const log = `${e0.map((e) => e.line).join('\n')}\n=====\n${e1.map((e) => e.line).join('\n')}`;
    expect(log).not.toMatch(/changed while it was pushed/);
    expect(r0, log).toMatchObject({ outcome: 'segment-saved', step: 1 });
    expect(pointerStep(cwd), log).toBe(1);
  });
});

/** The one session folder node 0 started in the nodes folder. */
function sessionOf(cwd: string): string {
  return (JSON.parse(readFileSync(join(cwd, 'nodes', 'current.json'), 'utf8')) as { session: string }).session;
}
