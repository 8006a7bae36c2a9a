import { sha256Hex } from './_fs';
import { MANIFEST_NAME } from './_layout';
import type { CheckpointStore, Manifest, StoreEntry } from './types';
import { validateManifest } from './validate-manifest';

export interface VerifyCheckpointOptions {
  store: CheckpointStore;
  /** Folder in the repo, e.g. `ckpt/checkpoint-120` or `final`. */
  pathInRepo: string;
  /** sha256 the folder's manifest.json must have (from latest.json or the push). @default not checked */
  expectedManifestSha256?: string;
  /** Run fingerprint the manifest must carry. @default not checked */
  expectedRun?: string;
  /** Step the manifest must carry. @default not checked */
  expectedStep?: number;
  /** Listing of the folder, when the caller already has it (saves a call). @default listed from the store */
  entries?: StoreEntry[];
  /**
   * git blob ids of the files as pushed (manifest name → sha1, hashed with their sha256 in one pass): a file the
   * store lists by its git blob id is verified from the listing, without downloading it. @default none (such files
   * are downloaded and hashed)
   */
  gitOids?: ReadonlyMap<string, string>;
  /** Aborts between files. @default none */
  signal?: AbortSignal;
}

export interface VerifyCheckpointResult {
  ok: boolean;
  pathInRepo: string;
  /** One line per problem (empty when ok). */
  problems: string[];
  manifest: Manifest | null;
  manifestSha256: string | null;
  /** Files verified by the store's sha256 (LFS oid) or git blob id, and size, without downloading. */
  checkedByOid: number;
  /** Files verified by downloading and hashing them. */
  checkedByDownload: number;
}

/**
 * Verifies a checkpoint folder from the store's side: manifest.json present, valid and with the
 * expected sha256/run/step, then every file it lists present with its size and sha256 — by the
 * listing's sha256 (LFS oid) when the store has one, or its git blob id against the pushed file's
 * (`gitOids`), else by reading and hashing the file.
 */
export async function verifyCheckpoint(opts: VerifyCheckpointOptions): Promise<VerifyCheckpointResult> {
  const { store, pathInRepo } = opts;
  const result: VerifyCheckpointResult = {
    ok: false,
    pathInRepo,
    problems: [],
    manifest: null,
    manifestSha256: null,
    checkedByOid: 0,
    checkedByDownload: 0,
  };
  const problems = result.problems;
  opts.signal?.throwIfAborted();
  const raw = await store.readFile({ path: `${pathInRepo}/${MANIFEST_NAME}` });
  if (raw === null) {
    problems.push(`${pathInRepo}/${MANIFEST_NAME} is missing`);
    return result;
  }
  result.manifestSha256 = sha256Hex(raw);
  if (opts.expectedManifestSha256 !== undefined && result.manifestSha256 !== opts.expectedManifestSha256) {
    problems.push(
      `${pathInRepo}/${MANIFEST_NAME} has sha256 ${result.manifestSha256.slice(0, 12)}…, expected ` +
        `${opts.expectedManifestSha256.slice(0, 12)}…`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(raw));
  } catch (err) {
    problems.push(`${pathInRepo}/${MANIFEST_NAME} is not JSON: ${(err as Error).message}`);
    return result;
  }
  const v = validateManifest(value);
  if (v.errors.length > 0) {
    problems.push(...v.errors.map((e) => `${pathInRepo}/${MANIFEST_NAME}: ${e}`));
    return result;
  }
  const manifest = value as Manifest;
  result.manifest = manifest;
  if (opts.expectedRun !== undefined && manifest.run !== opts.expectedRun) {
    problems.push(`manifest run is "${manifest.run}", expected "${opts.expectedRun}"`);
  }
  if (opts.expectedStep !== undefined && manifest.step !== opts.expectedStep) {
    problems.push(`manifest step is ${manifest.step}, expected ${opts.expectedStep}`);
  }
  const entries = opts.entries ?? (await store.list({ prefix: pathInRepo }));
  const byPath = new Map(entries.map((e) => [e.path, e]));
  for (const [name, want] of Object.entries(manifest.files)) {
    const path = `${pathInRepo}/${name}`;
    const entry = byPath.get(path);
    if (!entry) {
      problems.push(`${path} is missing`);
      continue;
    }
    if (entry.sizeBytes !== want.size) {
      problems.push(`${path} is ${entry.sizeBytes} bytes, the manifest says ${want.size}`);
      continue;
    }
    if (entry.sha256 !== undefined) {
      result.checkedByOid++;
      if (entry.sha256 !== want.sha256)
        problems.push(
          `${path} has sha256 ${entry.sha256.slice(0, 12)}…, the manifest says ${want.sha256.slice(0, 12)}…`,
        );
      continue;
    }
    const pushedGitOid = opts.gitOids?.get(name);
    if (entry.gitOid !== undefined && pushedGitOid !== undefined) {
      result.checkedByOid++;
      if (entry.gitOid !== pushedGitOid)
        problems.push(
          `${path} has git blob id ${entry.gitOid.slice(0, 12)}…, the pushed file ${pushedGitOid.slice(0, 12)}…`,
        );
      continue;
    }
    opts.signal?.throwIfAborted();
    const got = await store.hash(opts.signal ? { path, signal: opts.signal } : { path });
    result.checkedByDownload++;
    if (got === null) problems.push(`${path} is missing`);
    else if (got.sizeBytes !== want.size || got.sha256 !== want.sha256) {
      problems.push(
        `${path} reads as ${got.sizeBytes} bytes with sha256 ${got.sha256.slice(0, 12)}…, the manifest says ` +
          `${want.size} bytes with ${want.sha256.slice(0, 12)}…`,
      );
    }
  }
  result.ok = problems.length === 0;
  return result;
}
