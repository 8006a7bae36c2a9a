// supervise() driven directly (no `soup`): real trainer processes, a real directory store.
import { DirStore, type CheckpointStore, type StoreCommitParams } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervise, type SuperviseEvent } from './supervise';

const HALF = 256 * 1024;

/** Whether the store's copy of checkpoint-1/model.bin is whole (both halves, ending in END). */
function wholeInStore(root: string, folder: string): boolean {
  const p = join(root, folder, 'model.bin');
  if (!existsSync(p)) return false;
  const b = readFileSync(p);
  return b.length === 2 * HALF && b.subarray(b.length - 3).toString() === 'END';
}

describe('[slow] supervise(): what was pushed must equal what is on disk when the push ends', {
  timeout: 120_000,
}, () => {
  it(
    'a folder that changes after its upload verified: the pointer does not move onto it; it is pushed ' +
      'again once settled',
    async () => {
      const cwd = useTempDir('soup-supervise-changed-');
      const root = join(cwd, 'store');
      const dir = new DirStore({ root });
      const pointerMoves: Array<{ path: string; whole: boolean }> = [];
      // The store answers each upload only after a second: the trainer goes on writing meanwhile.
      const store: CheckpointStore = Object.assign(Object.create(dir) as CheckpointStore, {
        kind: dir.kind,
        description: dir.description,
        async commit(p: StoreCommitParams) {
          await dir.commit(p);
          const pointer = p.operations.find((op) => op.path === 'latest.json' && op.kind === 'put');
          if (pointer && 'bytes' in pointer) {
            const at = (JSON.parse(new TextDecoder().decode(pointer.bytes)) as { path_in_repo: string }).path_in_repo;
            pointerMoves.push({ path: at, whole: wholeInStore(root, at) });
          }
          if (p.message.startsWith('soup: upload')) await new Promise((r) => setTimeout(r, 1000));
        },
      });
      // No marker file: the first half, a pause longer than --settle, then the rest.
      const trainer = `
      const fs = require('node:fs'), path = require('node:path'), d = path.join(process.argv[1], 'checkpoint-1');
      fs.mkdirSync(d, { recursive: true });
      // Beside the raw model.bin, the weights final/ needs by content: a one-byte safetensors.
      const h = Buffer.from('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}');
      const n = Buffer.alloc(8);
      n.writeBigUInt64LE(BigInt(h.length));
      fs.writeFileSync(path.join(d, 'model.safetensors'), Buffer.concat([n, h, Buffer.from([1])]));
      fs.writeFileSync(path.join(d, 'model.bin'), Buffer.alloc(${HALF}, 1));
      setTimeout(() => {
        const b = Buffer.alloc(${HALF}, 2); b.write('END', b.length - 3);
        fs.appendFileSync(path.join(d, 'model.bin'), b);
        setTimeout(() => {}, 3000);
      }, 700);`;
      const events: SuperviseEvent[] = [];
      const result = await supervise({
        argv: [process.execPath, '-e', trainer, '{output_dir}'],
        store,
        outputDir: join(cwd, 'out'),
        cwd,
        env: process.env,
        signal: new AbortController().signal,
        completeFile: '',
        settleMs: 300,
        pollMs: 50,
        pushNice: 0,
        onEvent: (e) => events.push(e),
      });
      expect(pointerMoves.length).toBeGreaterThan(0);
      expect(pointerMoves.filter((m) => !m.whole)).toEqual([]);
      expect(pointerMoves[0]).toEqual({ path: 'ckpt/checkpoint-1', whole: true });
      expect(events.map((e) => e.line).join('\n')).toMatch(
        /push of step 1 not pointed to: out\/checkpoint-1 changed while it was pushed/,
      );
      expect(result).toMatchObject({ outcome: 'complete', step: 1, evidence: 'trainer-done' });
      // Lines for a caller to print carry no brand: the program that prints them adds its own prefix.
      expect(events.map((e) => e.line).filter((l) => l.startsWith('soup: '))).toEqual([]);
    },
  );
});
