// The local record of verified pushes, beside the checkpoint folders: which step verified to which store. Local
// prune deletes a folder only when its push verified to the store being pushed to (another store's copy is no
// copy there).
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './_fs';
import type { CheckpointStore, HubCkptLogger } from './types';

/** The file: `{"<step>": {"<store identity>": "<manifest sha256>"}}`. */
export const VERIFIED_LEDGER = '.soup-verified.json';

/**
 * Per step, the stores its push verified to. A value that is a bare string is an older record that named no
 * store: unknown, so it counts for no store.
 */
export type VerifiedLedger = Record<string, Record<string, string> | string>;

/**
 * Which store a verified push went to: the Hub repo (type, id, endpoint) or the directory's real path. Never a
 * token: the description holds none.
 */
export function storeIdentity(store: CheckpointStore): string {
  if (store.kind === 'dir' && store.description.startsWith('dir ')) {
    const root = store.description.slice(4);
    try {
      return `dir ${realpathSync(root)}`;
    } catch {
      return `dir ${root}`;
    }
  }
  return store.description;
}

export async function readLedger(parent: string): Promise<VerifiedLedger> {
  try {
    const v = JSON.parse(await readFile(join(parent, VERIFIED_LEDGER), 'utf8')) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as VerifiedLedger) : {};
  } catch {
    return {};
  }
}

/** Whether `step`'s push verified to the store named `identity` (an older record naming no store does not count). */
export function verifiedTo(ledger: VerifiedLedger, step: number, identity: string): boolean {
  const entry = ledger[String(step)];
  return entry !== undefined && typeof entry === 'object' && entry !== null && typeof entry[identity] === 'string';
}

/** Records that `step` (manifest `sha256`) verified to the store `identity`; a failure is a warning, never a throw. */
export async function recordVerified(p: {
  parent: string;
  ledger: VerifiedLedger;
  step: number;
  identity: string;
  sha256: string;
  logger: HubCkptLogger | undefined;
}): Promise<void> {
  const key = String(p.step);
  const entry = p.ledger[key];
  const stores = entry !== undefined && typeof entry === 'object' && entry !== null ? { ...entry } : {};
  if (stores[p.identity] === p.sha256) return;
  stores[p.identity] = p.sha256;
  p.ledger[key] = stores;
  try {
    await writeFileAtomic(
      join(p.parent, VERIFIED_LEDGER),
      new TextEncoder().encode(`${JSON.stringify(p.ledger, null, 2)}\n`),
    );
  } catch (err) {
    p.logger?.warn?.(
      `could not record the verified push in ${join(p.parent, VERIFIED_LEDGER)} (${(err as Error).message}` +
        `); local prune will keep this folder`,
    );
  }
}
