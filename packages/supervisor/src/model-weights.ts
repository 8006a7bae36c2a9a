// Which files hold a model's weights, judged by their content, not their name: a `.bin` may be training
// arguments and a `.pt` an optimizer's state, so a final/ needs a file whose bytes are weights.
import { closeSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { zipEntryNames } from './whole-zip';

/** What a weights file is. */
export type WeightsFormat = 'safetensors' | 'torch-zip' | 'zip-of-safetensors';

/**
 * Files a trainer saves beside the model that are its training state, not the model, whatever their content:
 * HF Trainer's optimizer.pt / scheduler.pt / scaler.pt / rng_state*.pth / training_args.bin, soup's
 * optimizer.safetensors.
 */
export const TRAINING_STATE_FILE: RegExp = /^(optimizer|scheduler|scaler|rng_state[^/]*|training_args)\.[^./]+$/i;

/** A safetensors header that parses and names at least one tensor lying inside the file. */
function isSafetensors(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    const size = fstatSync(fd).size;
    if (size < 8) return false;
    const head = Buffer.alloc(8);
    readSync(fd, head, 0, 8, 0);
    const n = Number(head.readBigUInt64LE(0));
    // Headers are small; one over 100 MiB (the safetensors limit) is not a header.
    if (n < 2 || n > 100 * 2 ** 20 || 8 + n > size) return false;
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, 8);
    const header = JSON.parse(buf.toString('utf8')) as unknown;
    if (typeof header !== 'object' || header === null || Array.isArray(header)) return false;
    const data = size - 8 - n;
    return Object.entries(header).some(([name, t]) => {
      if (name === '__metadata__' || typeof t !== 'object' || t === null) return false;
      const { dtype, shape, data_offsets: o } = t as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      return (
        typeof dtype === 'string' &&
        Array.isArray(shape) &&
        Array.isArray(o) &&
        o.length === 2 &&
        typeof o[0] === 'number' &&
        typeof o[1] === 'number' &&
        o[0] <= o[1] &&
        o[1] <= data
      );
    });
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/**
 * The weights format of one file by its content (null: not weights): a safetensors file; a torch.save zip
 * holding `data.pkl` and tensor data (`pytorch_model.bin`, a `.pt`, a Lightning `.ckpt`); a zip of model
 * safetensors (soup's own trainer's file checkpoints). Training-state files ({@link TRAINING_STATE_FILE}) are never
 * weights.
 */
export function weightsFormatOf(path: string, name: string): WeightsFormat | null {
  if (TRAINING_STATE_FILE.test(name)) return null;
  if (isSafetensors(path)) return 'safetensors';
  const entries = zipEntryNames(path);
  if (entries === null) return null;
  const base = (e: string): string => e.slice(e.lastIndexOf('/') + 1);
  if (entries.some((e) => base(e) === 'data.pkl') && entries.some((e) => /(^|\/)data\/\d+$/.test(e)))
    return 'torch-zip';
  if (entries.some((e) => e.endsWith('.safetensors') && !TRAINING_STATE_FILE.test(base(e))))
    return 'zip-of-safetensors';
  return null;
}

/** Every file under `dir` (relative paths, sorted); [] when it is missing. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(join(abs, e.name), r);
      else if (e.isFile()) out.push(r);
    }
  };
  try {
    walk(dir, '');
  } catch {
    // missing: no files
  }
  return out.sort();
}

/** The files under `dir` (relative paths) whose content is model weights (see {@link weightsFormatOf}). */
export function modelWeightFiles(dir: string): string[] {
  return filesUnder(dir).filter((f) => weightsFormatOf(join(dir, f), f.slice(f.lastIndexOf('/') + 1)) !== null);
}
