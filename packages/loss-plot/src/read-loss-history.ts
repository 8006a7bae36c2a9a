// The loss history of a checkpoint folder on disk: its trainer_state.json, read as lossHistoryOf reads one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type LossHistory, lossHistoryOf } from './loss-history-of';

/**
 * The loss history of `<checkpointDir>/trainer_state.json` ({@link lossHistoryOf}); none when the file is
 * missing or is not JSON: a curve is a view of the run, never a reason to fail it.
 */
export function readLossHistory(checkpointDir: string): LossHistory {
  let state: unknown;
  try {
    state = JSON.parse(readFileSync(join(checkpointDir, 'trainer_state.json'), 'utf8'));
  } catch {
    state = null;
  }
  return lossHistoryOf(state);
}
