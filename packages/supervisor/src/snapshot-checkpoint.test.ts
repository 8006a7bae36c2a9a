import { useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { snapshotChange, snapshotCheckpoint, SNAPSHOTS_DIR } from './snapshot-checkpoint';
import { signatureOf } from './watch-checkpoints';

/** A checkpoint folder as the watcher sees it when judging it complete. */
function checkpoint(root: string, step: number) {
  const path = join(root, `checkpoint-${step}`);
  mkdirSync(path, { recursive: true });
  writeFileSync(join(path, 'model.safetensors'), Buffer.alloc(4000, step));
  writeFileSync(join(path, 'trainer_state.json'), JSON.stringify({ global_step: step }));
  return { step, path, name: `checkpoint-${step}`, kind: 'dir' as const, signature: signatureOf(path).sig };
}

describe('snapshotCheckpoint', () => {
  it("survives the trainer's rotation (rmtree of its folder); a file rewritten in place is caught", () => {
    const out = useTempDir();
    const c = checkpoint(out, 4);
    const taken = snapshotCheckpoint({ outputDir: out, checkpoint: c });
    if (!taken.ok) throw new Error(taken.why);
    const s = taken.snapshot;
    expect(s).toMatchObject({ dir: join(out, SNAPSHOTS_DIR, 'checkpoint-4'), linked: 2, copied: 0 });
    rmSync(c.path, { recursive: true });
    expect(readFileSync(join(s.dir, 'model.safetensors'))).toEqual(Buffer.alloc(4000, 4));
    expect(snapshotChange(s)).toBeNull();

    const d = checkpoint(out, 6);
    const t2 = snapshotCheckpoint({ outputDir: out, checkpoint: d });
    if (!t2.ok) throw new Error(t2.why);
    writeFileSync(join(d.path, 'model.safetensors'), Buffer.alloc(10, 9)); // same inode, truncated and rewritten
    expect(snapshotChange(t2.snapshot)).toBe('model.safetensors');
  });

  it('a folder that changed after it was judged complete is refused, and nothing is left behind', () => {
    const out = useTempDir();
    const c = checkpoint(out, 2);
    writeFileSync(join(c.path, 'optimizer.pt'), 'late');
    expect(snapshotCheckpoint({ outputDir: out, checkpoint: c })).toEqual({
      ok: false,
      why: 'its files changed after it was judged complete',
    });
    expect(existsSync(join(out, SNAPSHOTS_DIR, 'checkpoint-2'))).toBe(false);
  });

  it('on another file system (no hard link: EXDEV) a copy within the limit, else refused', () => {
    const out = useTempDir();
    const shm = mkdtempSync('/dev/shm/soup-snapshot-');
    onTestFinished(() => rmSync(shm, { recursive: true, force: true }));
    const c = checkpoint(shm, 8);
    const copied = snapshotCheckpoint({ outputDir: out, checkpoint: c });
    expect(copied).toMatchObject({ ok: true, snapshot: { linked: 0, copied: 2 } });
    const refused = snapshotCheckpoint({ outputDir: out, checkpoint: c, copyLimitBytes: 1000 });
    expect(refused).toEqual({ ok: false, why: 'a hard link failed (EXDEV) and a copy would pass the 1000-byte limit' });
    expect(existsSync(join(out, SNAPSHOTS_DIR, 'checkpoint-8'))).toBe(false);
  });
});
