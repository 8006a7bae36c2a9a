import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import {
  ChecksumError,
  CorruptCheckpointError,
  PullTargetExistsError,
  UnsafePathError,
  DiskFullError,
  StoreMissingError,
} from './errors';
import { isDiskFull } from './is-disk-full';
import { fsyncPath, pathExists, sha256Hex, writeFileAtomic } from './_fs';
import { MANIFEST_NAME } from './_layout';
import { assertSafeName, unsafeReason } from './_paths';
import type { CheckpointStore, Manifest } from './types';
import { validateManifest } from './validate-manifest';

export interface PullCheckpointOptions {
  store: CheckpointStore;
  /** Folder in the repo, e.g. `ckpt/checkpoint-120` (from resolveResume) or `final`. */
  pathInRepo: string;
  /** Local folder to create. Files land in `<dir>.incomplete` first and it is renamed only when every hash matches. */
  dir: string;
  /** sha256 the remote manifest.json must have (resolveResume's `manifestSha256`). @default not checked */
  expectedManifestSha256?: string;
  /** Replace `dir` when it exists. @default false */
  overwrite?: boolean;
  /** Downloads per file before a size/sha256 mismatch is final. @default 2 */
  attempts?: number;
  /** Called after each file is downloaded and checked. @default none */
  onFile?: (event: { name: string; sizeBytes: number; index: number; count: number }) => void;
  /** Aborts between files (and inside a download); the staging folder is removed, `dir` is untouched. @default none */
  signal?: AbortSignal;
}

export interface PullResult {
  dir: string;
  step: number;
  manifest: Manifest;
  manifestSha256: string;
  fileCount: number;
  totalBytes: number;
}

/**
 * Cold pull of one checkpoint: download every manifest file into `<dir>.incomplete`, check each
 * size and sha256 against the manifest, write manifest.json, then rename into `dir`. Names with `..`,
 * absolute paths or backslashes are refused before anything is written.
 */
export async function pullCheckpoint(opts: PullCheckpointOptions): Promise<PullResult> {
  const { store, pathInRepo } = opts;
  assertSafeName(pathInRepo);
  const attempts = opts.attempts ?? 2;
  const signal = opts.signal;
  signal?.throwIfAborted();
  // A store that does not exist answers "missing" (a directory) or fails the read (the Hub): either way, say so.
  const missingStore = async (): Promise<boolean> => !(await store.exists().catch(() => true));
  const raw = await store.readFile({ path: `${pathInRepo}/${MANIFEST_NAME}` }).catch(async (err: unknown) => {
    throw (await missingStore()) ? new StoreMissingError(store.description) : err;
  });
  if (raw === null) {
    if (await missingStore()) throw new StoreMissingError(store.description);
    throw new CorruptCheckpointError(
      `${store.description}: ${pathInRepo}/${MANIFEST_NAME} is missing; nothing to pull.`,
      {
        pathInRepo,
        problems: [`${pathInRepo}/${MANIFEST_NAME} is missing`],
      },
    );
  }
  const manifestSha256 = sha256Hex(raw);
  if (opts.expectedManifestSha256 !== undefined && manifestSha256 !== opts.expectedManifestSha256) {
    const problem =
      `${pathInRepo}/${MANIFEST_NAME} has sha256 ${manifestSha256.slice(0, 12)}…, expected ` +
      `${opts.expectedManifestSha256.slice(0, 12)}…`;
    throw new CorruptCheckpointError(`${store.description}: ${problem}.`, { pathInRepo, problems: [problem] });
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(raw));
  } catch (err) {
    throw new CorruptCheckpointError(`${store.description}: ${pathInRepo}/${MANIFEST_NAME} is not JSON.`, {
      pathInRepo,
      problems: [(err as Error).message],
      cause: err,
    });
  }
  // Unsafe names first, and before any write.
  const files = (value as { files?: unknown } | null)?.files;
  if (files !== null && typeof files === 'object') {
    for (const name of Object.keys(files)) {
      const reason = unsafeReason(name);
      if (reason !== null) throw new UnsafePathError(name, reason);
    }
  }
  const v = validateManifest(value);
  if (v.errors.length > 0) {
    throw new CorruptCheckpointError(
      `${store.description}: ${pathInRepo}/${MANIFEST_NAME} is invalid: ${v.errors.join('; ')}.`,
      {
        pathInRepo,
        problems: v.errors,
      },
    );
  }
  const manifest = value as Manifest;

  const target = resolve(opts.dir);
  const staging = `${target}.incomplete`;
  const entries = Object.entries(manifest.files);
  const dests = entries.map(([name]) => {
    assertSafeName(name);
    const dest = join(staging, ...name.split('/'));
    const rel = relative(staging, dest);
    if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..'))
      throw new UnsafePathError(name, 'it resolves outside the checkpoint folder');
    return dest;
  });
  if ((await pathExists(target)) && !opts.overwrite) throw new PullTargetExistsError(target);

  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  let totalBytes = 0;
  try {
    for (let i = 0; i < entries.length; i++) {
      const [name, want] = entries[i] as [string, { size: number; sha256: string }];
      const dest = dests[i] as string;
      let got = { sizeBytes: -1, sha256: '' };
      for (let attempt = 1; attempt <= attempts; attempt++) {
        signal?.throwIfAborted();
        got = await store.download(
          signal ? { path: `${pathInRepo}/${name}`, dest, signal } : { path: `${pathInRepo}/${name}`, dest },
        );
        if (got.sizeBytes === want.size && got.sha256 === want.sha256) break;
      }
      if (got.sizeBytes !== want.size || got.sha256 !== want.sha256) {
        throw new ChecksumError({
          pathInRepo,
          file: name,
          expectedSha256: want.sha256,
          actualSha256: got.sha256,
          expectedBytes: want.size,
          actualBytes: got.sizeBytes,
        });
      }
      totalBytes += got.sizeBytes;
      opts.onFile?.({ name, sizeBytes: got.sizeBytes, index: i, count: entries.length });
    }
    signal?.throwIfAborted();
    await writeFileAtomic(join(staging, MANIFEST_NAME), raw);
    const dirs = new Set(dests.map((d) => dirname(d)));
    for (const d of dirs) await fsyncPath(d);
    await fsyncPath(staging);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    if (isDiskFull(err)) {
      const need = entries.reduce((a, [, f]) => a + f.size, 0) + raw.length;
      throw new DiskFullError({ path: target, bytesNeeded: need, what: `pulling ${pathInRepo}`, cause: err });
    }
    throw err;
  }
  await mkdir(dirname(target), { recursive: true });
  if (await pathExists(target)) {
    const old = `${target}.old-${randomBytes(4).toString('hex')}`;
    await rename(target, old);
    await rename(staging, target);
    await rm(old, { recursive: true, force: true });
  } else {
    await rename(staging, target);
  }
  await fsyncPath(dirname(target));
  return { dir: target, step: manifest.step, manifest, manifestSha256, fileCount: entries.length, totalBytes };
}
