// `squashHistory: 'auto'`: squash the Hub repo's history once it passes N commits, so a long run's history (and
// the bytes only older commits reach) stays bounded without anyone thinking of it.
import type { StoreLease } from './store-lease';
import type { CheckpointStore, HubCkptLogger } from './types';

/** The history length past which `'auto'` squashes: the Hub degrades a repo after a few thousand commits. */
export const DEFAULT_SQUASH_AFTER_COMMITS = 500;

/**
 * Squashes when the store's history is longer than `afterCommits`; returns whether it did. The squash keeps the
 * current files (the pointer, the kept folders, the lease). A failure is a warning: the next push tries again.
 */
export async function autoSquash(p: {
  store: CheckpointStore;
  lease: StoreLease | undefined;
  afterCommits: number;
  logger: HubCkptLogger | undefined;
}): Promise<boolean> {
  const { store } = p;
  if (!store.historyLength || !store.squashHistory) return false;
  try {
    const n = await store.historyLength();
    if (n === null || n <= p.afterCommits) return false;
    p.lease?.assertHeld();
    await store.squashHistory({ message: `soup: squash history (${n} commits, over ${p.afterCommits})` });
    p.logger?.info?.(`${store.description}: history squashed (${n} commits, over ${p.afterCommits})`);
    return true;
  } catch (err) {
    p.logger?.warn?.(`${store.description}: the automatic history squash failed (${(err as Error).message})`);
    return false;
  }
}
