import { mkdirSync } from 'node:fs';
import { resolveSaveDir } from './_save-dir';
import { errCode } from './_store-io';
import { OffloadConfigError } from './errors';

/** Resolves the save dir under `cwd`, creates it (mode 0700) and checks it again: its real path. */
export function openSaveDir(saveDir: string, cwd: string): string {
  const first = resolveSaveDir(saveDir, cwd);
  if (!first.ok) throw new OffloadConfigError(first.reason);
  try {
    mkdirSync(first.path, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new OffloadConfigError(`save_dir '${saveDir}': cannot create '${first.path}' (${errCode(err)})`, {
      cause: err,
    });
  }
  // Check again now that it exists: a component swapped for a symlink in between is caught here.
  const second = resolveSaveDir(first.path, cwd);
  if (!second.ok) throw new OffloadConfigError(second.reason);
  return second.path;
}
