// The one-writer lease a `soup train` / `soup run` session holds on its checkpoint store.
import { acquireLease, type CheckpointStore, type StoreLease } from '@soup/hub-ckpt';
import type { CommandContext } from './_context';

/** Takes the store's lease before the session's first write (LeaseHeldError, exit 11, names the holder). */
export async function holdStoreLease(p: {
  ctx: CommandContext;
  store: CheckpointStore;
  run: string;
  ttlMs: number;
  log?: (line: string) => void;
}): Promise<StoreLease> {
  const log = p.log ?? ((line: string) => p.ctx.warn(line));
  return acquireLease({ store: p.store, run: p.run, ttlMs: p.ttlMs, logger: { warn: (line) => log(line) } });
}
