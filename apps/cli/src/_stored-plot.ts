// The loss curve of the checkpoint a store's pointer names (soup ckpt status).
import { readStoredJson, type CheckpointStore } from '@soup/hub-ckpt';
import { lossHistoryOf } from '@soup/loss-plot';
import type { CommandContext } from './_context';
import { showLossPlot } from './_show-plot';

/** Reads `<pathInRepo>/trainer_state.json` from the store and shows its `log_history` (and writes `--plot`). */
export async function showStoredLossPlot(
  ctx: CommandContext,
  store: CheckpointStore,
  pathInRepo: string | null,
  plotPath: string | undefined,
): Promise<void> {
  const state = pathInRepo === null ? null : await readStoredJson({ store, path: `${pathInRepo}/trainer_state.json` });
  const { history, horizon } = lossHistoryOf(state);
  if (history.length === 0) {
    if (!ctx.json)
      ctx.say(
        `  loss curve   none (` +
          `${pathInRepo === null ? 'no pointer' : `${pathInRepo}/trainer_state.json has no log_history`})`,
      );
    if (plotPath !== undefined) ctx.warn(`--plot ${plotPath}: nothing to plot (no log_history)`);
    return;
  }
  showLossPlot(ctx, {
    history,
    ...(horizon !== null ? { horizon } : {}),
    ...(plotPath !== undefined ? { plotPath } : {}),
    title: `training loss (${pathInRepo})`,
  });
}
