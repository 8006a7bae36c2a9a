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

/**
 * A directory store in `cwd/store` that answers each upload only after a second (the trainer goes on writing
 * meanwhile), and records each pointer move with whether the checkpoint it names is whole in the store.
 */
function slowStore(cwd: string): { store: CheckpointStore; pointerMoves: Array<{ path: string; whole: boolean }> } {
  const root = join(cwd, 'store');
  const dir = new DirStore({ root });
  const pointerMoves: Array<{ path: string; whole: boolean }> = [];
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
  return { store, pointerMoves };
}

/**
 * A trainer writing checkpoint-1 in two halves: the first half (with trainer_state.json when `marker`), a pause
 * longer than --settle, then the rest; then it lives on for 3 s, or exits at once (`exitAtOnce`).
 */
const halvesTrainer = (o: { marker: boolean; exitAtOnce: boolean }): string => `
      const fs = require('node:fs'), path = require('node:path'), d = path.join(process.argv[1], 'checkpoint-1');
      fs.mkdirSync(d, { recursive: true });
      // Beside the raw model.bin, the weights final/ needs by content: a one-byte safetensors.
      const h = Buffer.from('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}');
      const n = Buffer.alloc(8);
      n.writeBigUInt64LE(BigInt(h.length));
      fs.writeFileSync(path.join(d, 'model.safetensors'), Buffer.concat([n, h, Buffer.from([1])]));
      fs.writeFileSync(path.join(d, 'model.bin'), Buffer.alloc(${HALF}, 1));
      ${o.marker ? "fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: 1, max_steps: 1 }));" : ''}
      setTimeout(() => {
        const b = Buffer.alloc(${HALF}, 2); b.write('END', b.length - 3);
        fs.appendFileSync(path.join(d, 'model.bin'), b);
        ${o.exitAtOnce ? '' : 'setTimeout(() => {}, 3000);'}
      }, 700);`;

describe('[slow] supervise(): what was pushed must equal what is on disk when the push ends', {
  timeout: 120_000,
}, () => {
  it(
    'a folder that changes after its upload verified: the pointer does not move onto it; it is pushed ' +
      'again once settled',
    async () => {
      const cwd = useTempDir('soup-supervise-changed-');
      const { store, pointerMoves } = slowStore(cwd);
      // No marker file: the first half, a pause longer than --settle, then the rest.
      const trainer = halvesTrainer({ marker: false, exitAtOnce: false });
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

  it(
    'a folder rewritten as the trainer exits: the push that saw it change is made again after the exit, so the ' +
      'session ends with the pointer on it',
    async () => {
      const cwd = useTempDir('soup-supervise-changed-exit-');
      const { store, pointerMoves } = slowStore(cwd);
      // With its marker (trainer_state.json: complete once the trainer exits by itself); it exits right after the
      // rewrite, so no scan while it runs sees the folder again.
      const events: SuperviseEvent[] = [];
      const result = await supervise({
        argv: [process.execPath, '-e', halvesTrainer({ marker: true, exitAtOnce: true }), '{output_dir}'],
        store,
        outputDir: join(cwd, 'out'),
        cwd,
        settleMs: 300,
        pollMs: 50,
        pushNice: 0,
        onEvent: (e) => events.push(e),
      });
      expect(pointerMoves.filter((m) => !m.whole)).toEqual([]);
      expect(pointerMoves.filter((m) => m.path === 'ckpt/checkpoint-1')).toEqual([
        { path: 'ckpt/checkpoint-1', whole: true },
      ]);
      expect(events.map((e) => e.line).join('\n')).toMatch(
        /push of step 1 not pointed to: out\/checkpoint-1 changed while it was pushed/,
      );
      expect(result).toMatchObject({ outcome: 'complete', step: 1 });
    },
  );
});
