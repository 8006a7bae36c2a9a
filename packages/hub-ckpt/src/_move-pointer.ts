// The second commit of a push: the pointer moved to the verified folder, with the remote prune and the lease's
// renewal riding on it, compare-and-swapped on the pointer the push read and on the folder's manifest.
import { CKPT_PREFIX, MANIFEST_NAME, POINTER_PATH, stepOfPath } from './_layout';
import { makePointer, pointerBytes } from './_pointer';
import type { StoreLease } from './store-lease';
import type { CheckpointStore, StoreOperation } from './types';

export interface MovePointerParams {
  store: CheckpointStore;
  step: number;
  run: string;
  pathInRepo: string;
  terminal: boolean;
  keepRemote: number | undefined;
  signal: AbortSignal | undefined;
  lease?: StoreLease | undefined;
}

/** The pointer commit (with the remote prune and the lease's renewal riding on it); the folders it pruned. */
export async function movePointer(
  p: MovePointerParams,
  pointerSha: string | null,
  manifestSha256: string,
  phase: (ph: 'pointer' | 'prune', path?: string) => Promise<void>,
): Promise<string[]> {
  const { store, step, run, pathInRepo, signal } = p;
  const prunedRemote: string[] = [];
  const ops: StoreOperation[] = [
    {
      kind: 'put',
      path: POINTER_PATH,
      bytes: pointerBytes(makePointer({ step, pathInRepo, run, terminal: p.terminal, manifestSha256 })),
    },
  ];
  // On the Hub the lease's renewal rides on this commit rather than costing one of its own.
  const ride = p.lease?.rideAlong() ?? null;
  if (ride !== null) ops.push(ride.operation);
  if (p.keepRemote !== undefined) {
    const bySteps = new Map<number, string[]>();
    for (const e of await store.list({ prefix: CKPT_PREFIX })) {
      const s = stepOfPath(e.path);
      if (s === null) continue;
      bySteps.set(s, [...(bySteps.get(s) ?? []), e.path]);
    }
    // Only folders at or below this step compete; newer ones (a diverged attempt) are left alone.
    const ranked = [...bySteps.keys()].filter((s) => p.terminal || s <= step).sort((a, b) => b - a);
    for (const s of p.keepRemote === Number.POSITIVE_INFINITY ? [] : ranked.slice(p.keepRemote)) {
      const folder = `${CKPT_PREFIX}/checkpoint-${s}`;
      if (folder === pathInRepo) continue;
      prunedRemote.push(folder);
      for (const path of bySteps.get(s) ?? []) ops.push({ kind: 'delete', path });
    }
  }
  let pointerMoved = false;
  try {
    p.lease?.assertHeld();
    await store.commit({
      message:
        `soup: latest.json -> ${pathInRepo} (step ${step}${p.terminal ? ', terminal' : ''})` +
        (prunedRemote.length > 0 ? `; prune ${prunedRemote.join(', ')}` : ''),
      operations: ops,
      // Compare-and-swap on the pointer this push read, and on the folder still holding this push's manifest:
      // a second writer that moved the pointer or replaced the folder since is refused, not overwritten.
      ifMatch: [
        { path: POINTER_PATH, sha256: pointerSha },
        { path: `${pathInRepo}/${MANIFEST_NAME}`, sha256: manifestSha256 },
        ...(ride === null ? [] : [ride.ifMatch]),
      ],
      ...(signal ? { signal } : {}),
      onProgress: async (ev) => {
        if (ev.stage === 'commit') await phase('pointer');
        else if (ev.kind === 'put' && ev.path === POINTER_PATH) {
          pointerMoved = true;
        } else if (ev.kind === 'delete') {
          if (pointerMoved) await phase('prune', ev.path);
        }
      },
    });
  } catch (err) {
    ride?.settle(false);
    throw err;
  }
  ride?.settle(true);
  return prunedRemote;
}
