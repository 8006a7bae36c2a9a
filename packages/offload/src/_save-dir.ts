import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Where a save dir really is, or why it is refused. */
export type SaveDirResolution = { ok: true; path: string; cwdReal: string } | { ok: false; reason: string };

/** True when `child` is strictly below `parent` (both absolute, normalised). */
export function isStrictlyInside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/**
 * Resolves `saveDir` against `cwd` with symlinks followed (for the part that exists) and refuses
 * anything that is not strictly below the real working directory: `..` escapes, absolute paths
 * elsewhere, symlinks pointing out, the working directory itself, a non-directory. Creates nothing.
 */
export function resolveSaveDir(saveDir: string, cwd: string): SaveDirResolution {
  let cwdReal: string;
  try {
    cwdReal = realpathSync(cwd);
  } catch (err) {
    return { ok: false, reason: `the working directory '${cwd}' cannot be resolved (${code(err)})` };
  }
  const lexical = resolve(cwd, saveDir);
  if (!isStrictlyInside(resolve(cwd), lexical)) {
    return {
      ok: false,
      reason:
        lexical === resolve(cwd)
          ? `save_dir '${saveDir}' is the working directory itself; use a subdirectory such as '.soup-offload'`
          : `save_dir '${saveDir}' resolves to '${lexical}', outside the working directory '${resolve(cwd)}` +
            `'; use a directory under it such as '.soup-offload'`,
    };
  }
  // Follow symlinks: real path of the deepest part that exists, plus the segments still to create.
  let existing = lexical;
  const rest: string[] = [];
  for (;;) {
    try {
      lstatSync(existing);
      break;
    } catch (err) {
      if (code(err) !== 'ENOENT')
        return { ok: false, reason: `save_dir '${saveDir}': cannot inspect '${existing}' (${code(err)})` };
      const parent = dirname(existing);
      if (parent === existing) break;
      rest.unshift(basename(existing));
      existing = parent;
    }
  }
  let existingReal: string;
  try {
    existingReal = realpathSync(existing);
  } catch (err) {
    return {
      ok: false,
      reason: `save_dir '${saveDir}': '${existing}' cannot be resolved (${code(err)}; a dangling symlink?)`,
    };
  }
  const real = rest.length > 0 ? join(existingReal, ...rest) : existingReal;
  if (!isStrictlyInside(cwdReal, real)) {
    return {
      ok: false,
      reason:
        `save_dir '${saveDir}' resolves through a symlink to '${real}', outside the working directory '` +
        `${cwdReal}'; use a real directory under it`,
    };
  }
  if (rest.length === 0) {
    try {
      if (!lstatSync(real).isDirectory())
        return { ok: false, reason: `save_dir '${saveDir}' exists and is not a directory` };
    } catch (err) {
      return { ok: false, reason: `save_dir '${saveDir}': cannot inspect '${real}' (${code(err)})` };
    }
  }
  return { ok: true, path: real, cwdReal };
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException | undefined)?.code ?? String(err);
}
