import { OffloadConfigError } from './errors';
import { resolveSaveDir } from './_save-dir';
import { sweepDir } from './_scratch';

/** Parameters of {@link sweepScratchFiles}. */
export interface SweepScratchFilesParams {
  /** The save dir to clean; must resolve strictly below `cwd`. */
  saveDir: string;
  /** @default process.cwd() */
  cwd?: string;
}

/**
 * Removes scratch files of crashed runs from a save dir — what every disk store does when it
 * opens: only files named `soup-act-<pid>-<token>-<n>.bin` whose owner pid is dead (or, for this
 * pid, whose store is closed); files of live stores and any other file stay. Returns the names removed.
 * @throws {OffloadConfigError} when the save dir escapes `cwd`.
 */
export function sweepScratchFiles(params: SweepScratchFilesParams): string[] {
  const resolved = resolveSaveDir(params.saveDir, params.cwd ?? process.cwd());
  if (!resolved.ok) throw new OffloadConfigError(resolved.reason);
  return sweepDir(resolved.path);
}
