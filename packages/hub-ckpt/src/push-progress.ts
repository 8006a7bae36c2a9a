// How far along a push is, from its phase events: one scale for a progress bar over any push (checkpoint or final).
import type { PushPhase, PushPhaseEvent } from './_push';

/** The steps of a push a progress bar counts: hash, upload, verify, move the pointer, prune. */
export const PUSH_PROGRESS_TOTAL = 5;

/** Each phase: the steps done when it starts, and what the push is doing then. */
const PHASES: Record<PushPhase, [number, string]> = {
  hash: [0, 'hashing'],
  upload: [1, 'uploading'],
  uploaded: [2, 'verifying from the store'],
  verified: [3, 'moving latest.json'],
  pointer: [3, 'moving latest.json'],
  pointed: [4, 'pruning'],
  prune: [4, 'pruning'],
  done: [5, 'done'],
};

/** Where a push stands: `done` of {@link PUSH_PROGRESS_TOTAL} steps, and a short status. */
export interface PushProgress {
  done: number;
  status: string;
}

/** A tracker for one push: each phase event in, where the push stands out (uploads counted as they land). */
export function trackPushProgress(): (event: Pick<PushPhaseEvent, 'phase'>) => PushProgress {
  let uploads = 0;
  return (event) => {
    if (event.phase === 'upload') uploads += 1;
    const [done, status] = PHASES[event.phase];
    return { done, status: event.phase === 'upload' ? `${status} (${uploads} landed)` : status };
  };
}
