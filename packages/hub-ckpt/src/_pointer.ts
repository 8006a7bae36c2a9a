import { MANIFEST_NAME, POINTER_PATH } from './_layout';
import { sha256Hex } from './_fs';
import type { CheckpointStore, Manifest, Pointer } from './types';
import { validatePointer } from './validate-pointer';

export interface ReadPointerResult {
  /** The raw bytes, or null when latest.json does not exist. */
  raw: Uint8Array | null;
  /** The parsed, valid pointer; null when missing or invalid. */
  pointer: Pointer | null;
  /** Why the pointer is invalid (empty when valid or missing). */
  errors: string[];
}

export async function readPointer(store: CheckpointStore): Promise<ReadPointerResult> {
  const raw = await store.readFile({ path: POINTER_PATH });
  if (raw === null) return { raw, pointer: null, errors: [] };
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(raw));
  } catch (err) {
    return { raw, pointer: null, errors: [`latest.json is not valid JSON: ${(err as Error).message}`] };
  }
  const { errors } = validatePointer(value);
  return { raw, pointer: errors.length === 0 ? (value as Pointer) : null, errors };
}

export function makePointer(p: {
  step: number;
  pathInRepo: string;
  run: string;
  terminal: boolean;
  manifestSha256: string;
}): Pointer {
  return {
    step: p.step,
    path_in_repo: p.pathInRepo,
    run: p.run,
    terminal: p.terminal,
    manifest_sha256: p.manifestSha256,
    updated_at: new Date().toISOString(),
  };
}

export function pointerBytes(pointer: Pointer): Uint8Array {
  const { errors } = validatePointer(pointer);
  if (errors.length > 0) throw new Error(`internal: refusing to write an invalid pointer: ${errors.join('; ')}`);
  return new TextEncoder().encode(`${JSON.stringify(pointer, null, 2)}\n`);
}

export function manifestSha(bytes: Uint8Array): string {
  return sha256Hex(bytes);
}

export function manifestPath(pathInRepo: string): string {
  return `${pathInRepo}/${MANIFEST_NAME}`;
}

export type { Manifest };
