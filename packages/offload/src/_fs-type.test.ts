import { mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { memoryBackedFs } from './_fs-type';
import { ActivationStore } from './activation-store';
import { checkOffloadConfig } from './check-offload-config';

const TMPFS = 0x01021994;
const shmIsTmpfs = ((): boolean => {
  try {
    return Number(statfsSync('/dev/shm').type) === TMPFS;
  } catch {
    return false;
  }
})();
if (!shmIsTmpfs) console.log('[skip] tmpfs save-dir warning: /dev/shm is not a tmpfs here');

function tempIn(root: string): string {
  const dir = mkdtempSync(join(root, 'soup-i15-fstype-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('a save dir in RAM', () => {
  it.skipIf(!shmIsTmpfs)('is named tmpfs, warned about by the config check and by the store, and still works', () => {
    const cwd = tempIn('/dev/shm');
    expect(memoryBackedFs(join(cwd, 'not-yet', 'deeper'))).toBe('tmpfs');
    const report = checkOffloadConfig({ target: 'disk', backend: 'onnxruntime', device: 'cpu', saveDir: '.acts', cwd });
    expect(report.errors).toEqual([]);
    expect(report.warnings).toEqual([
      expect.stringMatching(
        /save_dir '\.acts' is on tmpfs, which keeps files in RAM.*Pick a directory on a disk-backed/,
      ),
    ]);
    const warnings: string[] = [];
    const store = new ActivationStore({ target: 'disk', saveDir: '.acts', cwd, onWarning: (m) => warnings.push(m) });
    expect(store.saveDirMemoryFs).toBe('tmpfs');
    expect(warnings).toHaveLength(1);
    const h = store.pack({ dtype: 'float32', dims: [3], data: new Float32Array([1, 2, 3]) });
    expect(Array.from(store.unpack(h).data as Float32Array)).toEqual([1, 2, 3]);
    store.close();
    expect(readdirSync(join(cwd, '.acts'))).toEqual([]);
  });

  it('a disk-backed save dir gets no warning (fdatasync by default, bytes round-trip)', () => {
    const cwd = tempIn(tmpdir());
    const fsType = memoryBackedFs(cwd);
    if (fsType) console.log(`[note] ${tmpdir()} is ${fsType} on this machine: checking the warning instead`);
    const warnings: string[] = [];
    const store = new ActivationStore({ target: 'disk', saveDir: '.acts', cwd, onWarning: (m) => warnings.push(m) });
    expect(store.saveDirMemoryFs).toBe(fsType);
    expect(warnings).toHaveLength(fsType ? 1 : 0);
    const data = Float64Array.from({ length: 4096 }, (_, i) => i / 7);
    const h = store.pack({ dtype: 'float64', dims: [64, 64], data });
    expect(store.unpack(h).data).toEqual(data);
    store.close();
  });
});
