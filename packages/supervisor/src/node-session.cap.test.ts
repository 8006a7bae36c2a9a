// Node 0's push cap from the followers' notes, on real files: a follower writes its `progress` note again after its
// `exit` note (its end-of-session push pass rescans the shared folder), so the later note may name a newer
// checkpoint than the exit note did. What a follower is known to have reached never goes down.
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCheckpointWatcher } from './watch-checkpoints';
import { createTell } from './_tell';
import { joinNodes } from './_node-session';
import { writeNote } from './_nodes-files';

describe("node 0's push cap", () => {
  it("an exit note naming step 2 does not lower a later progress note's step 3", async () => {
    const cwd = useTempDir('soup-node-cap-');
    const out = join(cwd, 'out');
    for (const step of [1, 2, 3]) {
      mkdirSync(join(out, `checkpoint-${step}`), { recursive: true });
      writeFileSync(join(out, `checkpoint-${step}`, 'trainer_state.json'), '{}');
    }
    const lines: string[] = [];
    const node0 = await joinNodes({
      o: { nodesDir: join(cwd, 'nodes'), outputDir: out, signal: new AbortController().signal },
      role: { rank: 0, count: 2, source: 'flags', slurmJobId: null },
      startedAtMs: Date.now(),
      tell: createTell({ cwd, onEvent: (e) => lines.push(e.line) }),
    });
    const watcher = createCheckpointWatcher({ dir: out, settleMs: 60_000 });
    watcher.scan(Date.now());
    const pushable = node0!.pushable(watcher);
    const newest = () => pushable.newestComplete({ asOfMs: Date.now(), trainerExited: true })?.checkpoint.step;
    expect(newest()).toBeUndefined(); // node 1 has reported nothing: nothing is every node's yet

    writeNote(node0!.dir!, 'exit-1', { rank: 1, step: 2, reached: null, code: 0, signal: null, stopping: true });
    writeNote(node0!.dir!, 'progress-1', { rank: 1, step: 3 });
    expect(newest()).toBe(3);
  });
});
