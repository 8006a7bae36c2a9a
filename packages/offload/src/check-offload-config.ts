import { quote } from './_quote';
import { memoryBackedFs, memoryBackedWarning } from './_fs-type';
import { resolveSaveDir } from './_save-dir';

/** Parameters of {@link checkOffloadConfig} and {@link validateOffloadConfig}. */
export interface OffloadConfigParams {
  /** `null` / `undefined` (off), `'cpu'` or `'disk'`. */
  target: 'cpu' | 'disk' | null | undefined | (string & {});
  /** Training backend: `'onnxruntime'` (soup's own step) or `'transformers'`; `'unsloth'` and `'mlx'` are refused. */
  backend: string;
  /** Training device: `'cuda'` (also `'cuda:N'`), `'cpu'`, `'mps'`. */
  device: string;
  /** Scratch directory for `'disk'`; must resolve (symlinks followed) strictly below `cwd`. @default null */
  saveDir?: string | null;
  /** Working directory the save dir must stay under. @default process.cwd() */
  cwd?: string;
}

/** Problems found by {@link checkOffloadConfig}; `errors` empty when the config is valid or disabled. */
export interface OffloadConfigReport {
  errors: string[];
  warnings: string[];
}

const BACKENDS: ReadonlySet<string> = new Set(['onnxruntime', 'transformers']);

/**
 * Checks an `activation_offloading` config without throwing or touching the disk (beyond
 * resolving the save dir's existing part). Keeps the Python original's checks and wording:
 * - `target` null → valid (off);
 * - backend `'unsloth'` / `'mlx'` → refused with the original messages (and nothing else reported);
 * - `'disk'` without a save dir → the original message;
 * - target `'cpu'` on a non-CUDA device → the original "requires CUDA training" message (on a cpu
 *   device there is nothing to move); `'disk'` is valid on any device, as it relieves host RAM too;
 * adapted to soup: an unknown target or backend is refused, and the save dir must resolve under cwd.
 */
export function checkOffloadConfig(params: OffloadConfigParams): OffloadConfigReport {
  const { target, backend, device } = params;
  const saveDir = params.saveDir ?? null;
  const errors: string[] = [];
  const warnings: string[] = [];

  if (target === null || target === undefined) return { errors, warnings };

  if (backend === 'unsloth') {
    errors.push(
      'Activation offloading is not compatible with the unsloth backend. ' +
        'Unsloth manages its own memory. Use backend: transformers.',
    );
    return { errors, warnings };
  }
  if (backend === 'mlx') {
    errors.push('Activation offloading is not supported on the mlx backend. Use backend: transformers.');
    return { errors, warnings };
  }
  if (target !== 'cpu' && target !== 'disk') {
    errors.push(`Unknown activation_offloading target: ${quote(target)}. Expected null, 'cpu', or 'disk'.`);
    return { errors, warnings };
  }
  if (!BACKENDS.has(backend)) {
    errors.push(
      `Activation offloading does not know the backend ${quote(backend)}. ` +
        'Use backend: onnxruntime or backend: transformers.',
    );
  }
  if (target === 'cpu' && !isCuda(device)) {
    errors.push(
      `Activation offloading requires CUDA training. Current device: ${device}. ` +
        "(activation_offloading='cpu' moves activations from GPU memory to host RAM; on this device there is " +
        'nothing to move. ' +
        "Use activation_offloading='disk' to relieve host RAM.)",
    );
  }
  if (target === 'disk' && !saveDir) {
    errors.push(
      "activation_offloading='disk' requires a save_dir " + '(scratch directory for offloaded activation tensors).',
    );
  }
  if (target === 'disk' && saveDir) {
    const resolved = resolveSaveDir(saveDir, params.cwd ?? process.cwd());
    if (!resolved.ok) errors.push(`activation_offloading='disk': ${resolved.reason}.`);
    else {
      const fsType = memoryBackedFs(resolved.path);
      if (fsType) warnings.push(memoryBackedWarning(saveDir, fsType));
    }
  }
  if (target === 'cpu' && saveDir) {
    warnings.push(`save_dir '${saveDir}' is only used by activation_offloading='disk'; it is ignored for 'cpu'.`);
  }
  return { errors, warnings };
}

function isCuda(device: string): boolean {
  return device === 'cuda' || /^cuda:\d+$/.test(device);
}
