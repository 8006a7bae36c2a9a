import { useTempDir } from '@soup/test-utils';
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCheckpointWatcher, globToRegExp, stepOfName } from './watch-checkpoints';

function folder(root: string, name: string, files: Record<string, string>, mtimeS?: number): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [f, c] of Object.entries(files)) {
    writeFileSync(join(dir, f), c);
    if (mtimeS !== undefined) utimesSync(join(dir, f), mtimeS, mtimeS);
  }
  if (mtimeS !== undefined) utimesSync(dir, mtimeS, mtimeS);
  return dir;
}

describe('checkpoint watcher', () => {
  it('names: glob, default step (last number) and a custom step regex', () => {
    expect(globToRegExp('checkpoint-*').test('checkpoint-120')).toBe(true);
    expect(globToRegExp('checkpoint-*').test('tmp-checkpoint-120')).toBe(false);
    expect(globToRegExp('*.ckpt').test('epoch=1-step=300.ckpt')).toBe(true);
    expect(stepOfName('checkpoint-120')).toBe(120);
    expect(stepOfName('epoch=1-step=300.ckpt')).toBe(300);
    expect(stepOfName('epoch=1-step=300.ckpt', /epoch=(\d+)/)).toBe(1);
    expect(stepOfName('final')).toBeNull();
  });

  it(
    'complete = marker AND (settled OR a newer one appeared OR the trainer exited); never a folder without ' +
      'the marker',
    () => {
      const root = useTempDir();
      const w = createCheckpointWatcher({ dir: root, settleMs: 10_000 });
      const now = Date.now();
      // No marker: never complete, however old and whatever the trainer did.
      folder(root, 'checkpoint-10', { 'model.safetensors': 'half' }, now / 1000 - 3600);
      w.scan(now);
      expect(w.newestComplete({ asOfMs: now, trainerExited: false })).toBeNull();
      expect(w.newestComplete({ asOfMs: now, trainerExited: true })).toBeNull();

      // Marker, but just written: not settled; complete only once the trainer exited.
      folder(root, 'checkpoint-20', { 'model.safetensors': 'w', 'trainer_state.json': '{}' });
      w.scan(now);
      expect(w.newestComplete({ asOfMs: now, trainerExited: false })).toBeNull();
      expect(w.newestComplete({ asOfMs: now, trainerExited: true })).toMatchObject({
        checkpoint: { step: 20 },
        reason: 'trainer-exited',
      });
      // Unchanged for settleMs: settled.
      w.scan(now + 10_000);
      expect(w.newestComplete({ asOfMs: now + 10_000, trainerExited: false })).toMatchObject({
        checkpoint: { step: 20 },
        reason: 'settled',
      });
      // A change restarts the clock.
      writeFileSync(join(root, 'checkpoint-20', 'optimizer.pt'), 'more');
      w.scan(now + 11_000);
      expect(w.newestComplete({ asOfMs: now + 11_000, trainerExited: false })).toBeNull();

      // A newer folder (even half-written) makes 20 complete; the newer one itself is not.
      folder(root, 'checkpoint-30', { 'model.safetensors': 'partial' });
      w.scan(now + 11_500);
      expect(w.newestComplete({ asOfMs: now + 11_500, trainerExited: false })).toMatchObject({
        checkpoint: { step: 20 },
        reason: 'newer-appeared',
      });
      expect(w.newestComplete({ asOfMs: now + 11_500, trainerExited: true })).toMatchObject({
        checkpoint: { step: 20 },
      });
    },
  );

  it('ignores dot-folders and names without a step; an old folder found at first sight is settled', () => {
    const root = useTempDir();
    const old = Date.now() / 1000 - 600;
    folder(root, '.checkpoint-99.partial', { 'trainer_state.json': '{}' }, old);
    folder(root, 'checkpoint-final', { 'trainer_state.json': '{}' }, old);
    folder(root, 'checkpoint-5', { 'trainer_state.json': '{}' }, old);
    const w = createCheckpointWatcher({ dir: root, settleMs: 30_000 });
    expect(w.scan(Date.now()).map((c) => c.name)).toEqual(['checkpoint-5']);
    expect(w.newestComplete({ asOfMs: Date.now(), trainerExited: false })).toMatchObject({
      checkpoint: { step: 5 },
      reason: 'settled',
    });
  });

  it("without a marker the trainer's exit proves nothing: only settling as of the exit counts", () => {
    const root = useTempDir();
    const w = createCheckpointWatcher({ dir: root, settleMs: 1000, completeFile: '' });
    const now = Date.now();
    folder(root, 'checkpoint-10', { 'model.bin': 'half' });
    w.scan(now);
    expect(w.newestComplete({ asOfMs: now, trainerExited: true })).toBeNull();
    expect(w.newestComplete({ asOfMs: now + 1000, trainerExited: true })).toMatchObject({
      checkpoint: { step: 10 },
      reason: 'settled',
    });
    // A newer folder does not prove an older marker-less one whole either: only time does.
    folder(root, 'checkpoint-20', { 'model.bin': 'x' });
    w.scan(now + 100);
    expect(w.newestComplete({ asOfMs: now + 100, trainerExited: false })).toBeNull();
  });

  it("only this run's: entries there at launch and unchanged are leftovers, except the one pulled", () => {
    const root = useTempDir();
    const old = Date.now() / 1000 - 600;
    folder(root, 'checkpoint-5', { 'trainer_state.json': '{}' }, old);
    folder(root, 'checkpoint-500', { 'trainer_state.json': '{}' }, old);
    folder(root, 'checkpoint-7', { 'trainer_state.json': '{}' }, old);
    const w = createCheckpointWatcher({ dir: root, settleMs: 1000 });
    expect(w.markLaunch({ pulled: 'checkpoint-7' }).map((c) => c.name)).toEqual(['checkpoint-5', 'checkpoint-500']);
    w.scan(Date.now());
    expect(w.newestComplete({ asOfMs: Date.now(), trainerExited: false })).toMatchObject({ checkpoint: { step: 7 } });
    // A leftover the trainer rewrites becomes this run's.
    writeFileSync(join(root, 'checkpoint-500', 'model.safetensors'), 'new');
    const t = Date.now() + 2000;
    w.scan(t);
    expect(w.newestComplete({ asOfMs: t + 1000, trainerExited: false })).toMatchObject({
      checkpoint: { step: 500 },
      reason: 'settled',
    });
  });

  it("top-level files: this run's only when they appeared or changed (inode, size, mtime) after the launch", () => {
    const root = useTempDir('soup-watch-top-');
    const out = join(root, 'out');
    folder(root, 'out', { 'model.safetensors': 'seed 7', 'trainer_state.json': '{}', soup_done: '', 'a.txt': 'a' });
    const w = createCheckpointWatcher({ dir: out, settleMs: 300 });
    expect(w.isThisRunsFile('trainer_state.json')).toBe(true); // before markLaunch every file counts
    w.markLaunch();
    expect(['model.safetensors', 'trainer_state.json', 'soup_done', 'new.bin'].map((f) => w.isThisRunsFile(f))).toEqual(
      [false, false, false, false],
    );
    writeFileSync(join(out, 'trainer_state.json'), '{"global_step": 1}'); // rewritten in place
    writeFileSync(join(out, 'new.bin'), 'x'); // appeared
    writeFileSync(join(out, 'a.tmp'), 'b');
    renameSync(join(out, 'a.tmp'), join(out, 'a.txt')); // replaced by a rename: same size, another inode
    rmSync(join(out, 'soup_done')); // gone
    expect(
      ['trainer_state.json', 'new.bin', 'a.txt', 'soup_done', 'model.safetensors'].map((f) => w.isThisRunsFile(f)),
    ).toEqual([true, true, true, false, false]);
  });

  it("a complete checkpoint's signature is taken after its marker was seen (no stale signature)", async () => {
    const root = useTempDir();
    // Another process writes checkpoints as a trainer does (weights, then the marker) while this one scans: a
    // signature read before the marker appeared would make a complete checkpoint look changed once pushed.
    const writer = spawn(process.execPath, [
      '-e',
      `const fs = require('node:fs'), p = require('node:path');
       for (let i = 1; i <= 200; i++) {
         const d = p.join(process.argv[1], 'checkpoint-' + i);
         fs.mkdirSync(d);
         fs.writeFileSync(p.join(d, 'model.safetensors'), Buffer.alloc(64 * 1024));
         fs.writeFileSync(p.join(d, 'trainer_state.json'), JSON.stringify({ global_step: i }));
       }`,
      root,
    ]);
    const exited = new Promise<void>((resolve) => writer.once('exit', () => resolve()));
    const w = createCheckpointWatcher({ dir: root, settleMs: 0 });
    const stale: string[] = [];
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      const now = Date.now();
      w.scan(now);
      const c = w.newestComplete({ asOfMs: now, trainerExited: false });
      const sig = c?.checkpoint.signature ?? 'trainer_state.json:1';
      if (!sig.includes('trainer_state.json:') || sig.includes('trainer_state.json:0:')) stale.push(sig);
      await new Promise((r) => setImmediate(r));
    }
    expect(stale).toEqual([]);
  });
});
