// A pull of one checkpoint into a folder: the one named, else the one latest.json names (what "pull the latest" means).
import { resolve } from 'node:path';
import { InvalidCheckpointOptionError, StoreMissingError } from './errors';
import { checkpointPath, FINAL_PATH } from './_layout';
import { asPullFailure } from './_pull-integrity';
import { checkpointStatus } from './checkpoint-status';
import { pullCheckpoint, type PullCheckpointOptions, type PullResult } from './pull-checkpoint';
import { pullResumeInto } from './pull-resume-into';
import type { CheckpointStore, HubCkptLogger } from './types';

/** Options of {@link pullPointed}. */
export interface PullPointedOptions {
  /** The store to pull from. */
  store: CheckpointStore;
  /** The folder the checkpoint becomes (not its parent), resolved against the working directory. */
  dest: string;
  /** The checkpoint to pull: a step (`ckpt/checkpoint-<step>`) or `'final'`. @default the one latest.json names */
  step?: number | 'final' | undefined;
  /** Replace `dest` when it exists; else a `PullTargetExistsError` before anything is read. @default false */
  overwrite?: boolean;
  /** How a refusal says to name a step (soup: `--step N`). @default 'a step' */
  stepFlag?: string;
  /** How a refusal says to name final/ (soup: `--final`). @default 'final' */
  finalFlag?: string;
  /** Aborts between files; nothing half-pulled is left. @default none */
  signal?: AbortSignal;
  /** Lines the resume path logs (a pointed checkpoint that does not verify, before the refusal). @default none */
  logger?: HubCkptLogger;
  /** Called after each file is downloaded and checked. @default none */
  onFile?: PullCheckpointOptions['onFile'];
}

/** What {@link pullPointed} pulled, and where. */
export interface PullPointedResult {
  /** The folder in the store, e.g. `ckpt/checkpoint-120` or `final`. */
  pathInRepo: string;
  /** The pull's result: step, manifest, files and bytes. */
  pulled: PullResult;
  /** `dest`, holding the checkpoint. */
  dir: string;
}

/**
 * Pulls the checkpoint `step` names, else the one `latest.json` names, into `dest` with every hash checked. A
 * terminal pointer's `final/` is pulled as it is; another pointer's checkpoint through the one resume path with no
 * fallback (exactly what the pointer names, or nothing). Refuses a store that does not exist (`StoreMissingError`),
 * one with no valid pointer (`InvalidCheckpointOptionError`, `field` `step`), and a pointed checkpoint that does not
 * verify or pull cleanly (`PullIntegrityError`; a file whose hash differs: its `ChecksumError`).
 */
export async function pullPointed(opts: PullPointedOptions): Promise<PullPointedResult> {
  const { store, signal, onFile } = opts;
  const dest = resolve(opts.dest);
  const io = { ...(signal ? { signal } : {}), ...(onFile ? { onFile } : {}) };
  const pullPath = async (pathInRepo: string): Promise<PullPointedResult> => {
    const pulled = await pullCheckpoint({ store, pathInRepo, dir: dest, overwrite: opts.overwrite === true, ...io });
    return { pathInRepo, pulled, dir: pulled.dir };
  };
  if (opts.step !== undefined) return pullPath(opts.step === 'final' ? FINAL_PATH : checkpointPath(opts.step));
  const st = await checkpointStatus({ store });
  if (!st.exists) throw new StoreMissingError(store.description);
  if (!st.pointer) {
    const how = `${opts.stepFlag ?? 'a step'} or ${opts.finalFlag ?? 'final'}`;
    throw new InvalidCheckpointOptionError(`${store.description} has no valid latest.json: pass ${how}`, {
      field: 'step',
    });
  }
  if (st.pointer.terminal) return pullPath(st.pointer.path_in_repo);
  const { outcome, dir } = await pullResumeInto({
    store,
    run: st.pointer.run,
    dest,
    overwrite: opts.overwrite === true,
    fallback: false,
    repair: false,
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...io,
  }).catch((err: unknown) => {
    throw asPullFailure(err);
  });
  if (outcome.outcome !== 'resume' || dir === null)
    throw new InvalidCheckpointOptionError(`${store.description}: nothing to pull (${outcome.outcome})`, {
      field: 'step',
    });
  return { pathInRepo: outcome.pathInRepo, pulled: outcome.pulled, dir };
}
