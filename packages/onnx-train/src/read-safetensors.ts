import { readFileSync } from 'node:fs';
import { decodeSafetensors, type SafetensorsFile } from './decode-safetensors';
import { SafetensorsError } from './errors';

/** Reads and validates a safetensors file. */
export function readSafetensors(path: string): SafetensorsFile {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new SafetensorsError(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return decodeSafetensors(bytes);
  } catch (err) {
    if (err instanceof SafetensorsError) throw new SafetensorsError(`${path}: ${err.message}`, { cause: err });
    throw err;
  }
}
