import { writeFileAtomic } from './_fs';
import { encodeSafetensors, type SafetensorsTensor } from './encode-safetensors';

/** Writes a safetensors file atomically (temp file, fsync, rename); returns its size in bytes. */
export function writeSafetensors(options: {
  path: string;
  tensors: Iterable<[string, SafetensorsTensor]>;
  metadata?: Readonly<Record<string, string>>;
}): number {
  const bytes = encodeSafetensors(options);
  writeFileAtomic(options.path, bytes);
  return bytes.length;
}
