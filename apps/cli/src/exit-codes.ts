/**
 * The documented exit codes of `soup` (also in the README). Scripts can rely on them:
 * e.g. a Kaggle notebook treats 6 (resume refused) differently from 5 (hub unreachable, retry).
 */
export const EXIT_CODES = {
  /** Success (including "nothing to do: the run is complete"). */
  ok: 0,
  /** An unexpected error (a bug, or something soup did not classify). */
  internal: 1,
  /** Bad command line: an unknown flag, a missing argument, a value out of range. */
  usage: 2,
  /** soup.yaml is missing or invalid, or a data file is unreadable. */
  config: 3,
  /** The Hub needs a token and none was given, or it refused the one given (401/403). */
  auth: 4,
  /** The Hub (or the directory store) cannot be reached, or keeps failing. */
  hub: 5,
  /** Resume refused: the checkpoint repo belongs to another run (stale) or is corrupt. */
  resume: 6,
  /** Not even the smallest batch size fits the device's memory budget. */
  noFit: 7,
  /** A checkpoint's files do not match its manifest (verify or pull failed). */
  integrity: 8,
  /** The device (e.g. the CUDA execution provider) is not available. */
  device: 9,
  /** Training failed (non-finite loss, a failed step, a failed child). */
  train: 10,
  /** Another writer holds the checkpoint store's lease (another session of this run, or another run): nothing was written. */
  storeBusy: 11,
  /** The local disk is full: the message names the path and the bytes needed; the store and its pointer are untouched. */
  diskFull: 12,
  /**
   * The session ended early (`--time-limit`, SIGTERM, SIGINT) and the newest complete checkpoint was
   * saved and pushed: run the same command again to continue (75 = EX_TEMPFAIL, "try again later").
   */
  segmentSaved: 75,
  /** Interrupted by SIGINT / SIGTERM. */
  interrupted: 130,
} as const;

/** Name of an exit code. */
export type ExitCodeName = keyof typeof EXIT_CODES;

/** Error `code` → exit code. Codes not listed fall back by prefix, then to `internal`. */
const BY_CODE: Record<string, ExitCodeName> = {
  SOUP_USAGE: 'usage',
  SOUP_CONFIG_INVALID: 'config',
  SOUP_CONFIG_NOT_FOUND: 'config',
  SOUP_HUB_TOKEN_MISSING: 'auth',
  SOUP_TRAIN_FAILED: 'train',
  SOUP_RESUME_REFUSED: 'resume',
  SOUP_INTERRUPTED: 'interrupted',
  // @soup/batch-probe
  SOUP_NO_BATCH_FITS: 'noFit',
  SOUP_OOM: 'noFit',
  SOUP_BATCH_INVALID_OPTION: 'usage',
  SOUP_BATCH_INVALID_PROBE_OUTCOME: 'internal',
  SOUP_BATCH_CACHE_LOCK_TIMEOUT: 'internal',
  SOUP_BATCH_CACHE_WRITE: 'internal',
  // @soup/cuda-probe
  SOUP_PROBE_INVALID_OPTIONS: 'usage',
  SOUP_PROBE_TIMEOUT: 'train',
  SOUP_PROBE_CHILD_FAILED: 'train',
  SOUP_DEVICE_QUERY_FAILED: 'device',
  // @soup/hub-ckpt
  SOUP_HUB_CKPT_INVALID_OPTION: 'usage',
  SOUP_HUB_CKPT_STORE: 'hub',
  SOUP_HUB_CKPT_AUTH: 'auth',
  SOUP_HUB_CKPT_STALE_RUN: 'resume',
  SOUP_HUB_CKPT_CORRUPT: 'resume',
  SOUP_HUB_CKPT_VERIFY: 'integrity',
  SOUP_HUB_CKPT_CHECKSUM: 'integrity',
  SOUP_HUB_CKPT_UNSAFE_PATH: 'integrity',
  SOUP_HUB_CKPT_POINTED_CONFLICT: 'usage',
  SOUP_HUB_CKPT_PULL_TARGET_EXISTS: 'usage',
  SOUP_HUB_CKPT_POINTER_REGRESSION: 'usage',
  SOUP_HUB_CKPT_LINKED_ENTRY: 'integrity',
  SOUP_HUB_CKPT_CONCURRENT_WRITE: 'storeBusy',
  SOUP_HUB_CKPT_UNSAFE_LINK: 'usage',
  SOUP_HUB_CKPT_LEASE_HELD: 'storeBusy',
  SOUP_HUB_CKPT_LEASE_LOST: 'storeBusy',
  SOUP_HUB_CKPT_FOLDER_CONFLICT: 'storeBusy',
  SOUP_HUB_CKPT_DISK_FULL: 'diskFull',
  // @soup/tune
  SOUP_TUNE_NOTHING_TIMED: 'usage',
  SOUP_TUNE_NOTHING_CHOSEN: 'internal',
  // @soup/supervisor
  SOUP_SUPERVISOR_USAGE: 'usage',
  SOUP_SUPERVISOR_LOCKED: 'usage',
  SOUP_SUPERVISOR_RESUME_REFUSED: 'resume',
  // @soup/onnx-train
  SOUP_ONNX_TRAIN_BAD_SPEC: 'config',
  SOUP_ONNX_TRAIN_BAD_DATA: 'config',
  SOUP_ONNX_TRAIN_EP_UNAVAILABLE: 'device',
  SOUP_ONNX_TRAIN_STEP_FAILED: 'train',
  SOUP_ONNX_TRAIN_BAD_INPUT: 'train',
  SOUP_ONNX_TRAIN_CHECKPOINT_INVALID: 'integrity',
  SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH: 'resume',
  SOUP_SAFETENSORS_INVALID: 'integrity',
  // @soup/offload
  SOUP_OFFLOAD_CONFIG_INVALID: 'config',
  // @soup/grad-ckpt
  SOUP_GRAD_CKPT_BAD_GRANULARITY: 'config',
  SOUP_GRAD_CKPT_BAD_BUDGET_INPUT: 'config',
};

/** Prefix rules for codes not in the table, most specific first. */
const BY_PREFIX: [RegExp, ExitCodeName][] = [
  [/^SOUP_(HUB_)?(AUTH|UNAUTHORI[SZ]ED|FORBIDDEN|TOKEN)/, 'auth'],
  [/^SOUP_.*(STALE|RESUME_REFUSED|CORRUPT)/, 'resume'],
  [/^SOUP_.*(VERIFY|INTEGRITY|HASH|MANIFEST_MISMATCH|PULL_MISMATCH)/, 'integrity'],
  [/^SOUP_(HUB|STORE|CKPT)_/, 'hub'],
  [/^SOUP_.*(CUDA|DEVICE|PROVIDER)/, 'device'],
  [/^SOUP_.*(CONFIG|INVALID)/, 'usage'],
  [/^SOUP_(TRAIN|ONNX|OFFLOAD)/, 'train'],
];

/** The exit code for an error, from its `code` (see {@link EXIT_CODES}). */
export function exitCodeFor(err: unknown): number {
  const code =
    typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
      ? (err as { code: string }).code
      : undefined;
  if (code === undefined) return EXIT_CODES.internal;
  const name = BY_CODE[code] ?? BY_PREFIX.find(([re]) => re.test(code))?.[1] ?? 'internal';
  return EXIT_CODES[name];
}
