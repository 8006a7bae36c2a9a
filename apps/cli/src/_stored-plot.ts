// The loss curve of the checkpoint a store's pointer names (soup ckpt status).
import type { CheckpointStore } from '@soup/hub-ckpt';
import type { CommandContext } from './_context';
import { showLossPlot } from './_show-plot';
import type { LossPoint } from './loss-plot';

/** Reads `<pathInRepo>/trainer_state.json` from the store and shows its `log_history` (and writes `--plot`). */
export async function showStoredLossPlot(
  ctx: CommandContext,
  store: CheckpointStore,
  pathInRepo: string | null,
  plotPath: string | undefined,
): Promise<void> {
  let history: LossPoint[] = [];
  let horizon: number | undefined;
  if (pathInRepo !== null) {
    const raw = await store.readFile({ path: `${pathInRepo}/trainer_state.json` }).catch(() => null);
    if (raw) {
      try {
        const state = JSON.parse(new TextDecoder().decode(raw)) as { log_history?: unknown; max_steps?: unknown };
        if (Array.isArray(state.log_history))
          history = state.log_history.filter(
            (e): e is LossPoint => e !== null && typeof e === 'object' && Number.isInteger((e as LossPoint).step),
          );
        if (typeof state.max_steps === 'number') horizon = state.max_steps;
      } catch {
        // not JSON: no curve
      }
    }
  }
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
    ...(horizon !== undefined ? { horizon } : {}),
    ...(plotPath !== undefined ? { plotPath } : {}),
    title: `training loss (${pathInRepo})`,
  });
}
