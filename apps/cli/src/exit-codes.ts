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
  /**
   * Another writer holds the checkpoint store's lease (another session of this run, or another run): nothing was
   * written.
   */
  storeBusy: 11,
  /**
   * The local disk is full: the message names the path and the bytes needed; the store and its pointer are untouched.
   */
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

/** What an exit code means, written once: `soup --help` and the README's table are generated from it. */
export interface ExitCodeMeaning {
  /** One line of plain text: its line in `soup --help`. */
  readonly help: string;
  /** Its row in the README's table (Markdown): the same meaning, with the cases it covers. */
  readonly readme: string;
}

/** Every exit code's meaning; the mapped type makes a new code without one a type error. */
export const EXIT_CODE_MEANINGS: { readonly [K in ExitCodeName]: ExitCodeMeaning } = {
  ok: { help: 'success (also: the run is already complete)', readme: 'success (also: the run was already complete)' },
  internal: { help: 'unexpected error', readme: 'unexpected error (`SOUP_DEBUG=1` prints the stack)' },
  usage: {
    help: 'bad command line (unknown flag, missing argument)',
    readme:
      'bad command line: unknown flag, missing argument, value out of range; a refused `HF_ENDPOINT`; a push that ' +
      'would move `latest.json` backwards without `--force`; a symbolic link in a pushed folder that leaves it, ' +
      "loops or dangles; `soup run`: a `final/` without model weights, an output folder another `soup run`'s " +
      'trainer still uses',
  },
  config: {
    help: 'soup.yaml missing or invalid, data file unreadable',
    readme:
      '`soup.yaml` missing or invalid, a data file unreadable, a field `soup train` cannot honour, a corrupt batch ' +
      'cache file (left as it is)',
  },
  auth: {
    help: 'Hub token missing or refused',
    readme:
      'Hub token missing (none in the four places of the [token chain](#hugging-face-token)) or refused (401/403)',
  },
  hub: {
    help: 'Hub or directory store unreachable',
    readme: 'Hub or directory store unreachable, or failing after retries',
  },
  resume: {
    help: "resume refused (another run's checkpoints, or corrupt ones)",
    readme: "resume refused: another run's checkpoints (stale) or a corrupt one",
  },
  noFit: {
    help: 'no batch size fits the memory budget',
    readme: 'not even batch size 1 fits the memory budget',
  },
  integrity: {
    help: 'checkpoint files do not match their manifest',
    readme: 'checkpoint files do not match their manifest; a symbolic link inside a directory store',
  },
  device: {
    help: 'device not available (e.g. no CUDA execution provider)',
    readme: 'device not available (e.g. no CUDA execution provider)',
  },
  train: { help: 'training failed', readme: 'training failed (non-finite loss, a failed step or probe child)' },
  storeBusy: {
    help:
      'the checkpoint store is held by another writer (another session or run; --take-over-lease <id> if it is ' +
      'dead), or changed under this one; nothing was written',
    readme:
      'the checkpoint store is held by another writer (its lease names its id, host, pid, since when, run, time ' +
      'left; `--take-over-lease <id>` if you know it is dead), or another writer changed it under this one; ' +
      'nothing was written',
  },
  diskFull: {
    help: 'the local disk is full (the message names the folder and the bytes needed); the store is untouched',
    readme:
      'the local disk is full (the message names the folder and the bytes needed); the store and its pointer are ' +
      'untouched',
  },
  segmentSaved: {
    help:
      'segment saved (--stop-after-steps, --time-limit, SIGTERM, SIGINT): the current step (soup train) or ' +
      'the newest complete checkpoint (soup run) was saved and pushed; run the same command again to continue',
    readme:
      'segment saved: the session ended before the horizon, however it ended (`--stop-after-steps`, ' +
      '`--time-limit`, SIGTERM, SIGINT, SIGHUP; for `soup run` also a trainer that exited 0 before its horizon) ' +
      'after the newest complete checkpoint was pushed; run the same command again to continue',
  },
  interrupted: {
    help: 'interrupted (a second signal quits at once)',
    readme:
      "interrupted: SIGINT / SIGTERM outside `soup train`'s steps (e.g. a probe), or a second SIGINT / SIGTERM / " +
      'SIGHUP (quits at once; `--json` still prints one result)',
  },
};

/** The exit codes in ascending order, each with its name and meaning. */
export function exitCodeList(): { name: ExitCodeName; code: number; meaning: ExitCodeMeaning }[] {
  const isName = (name: string): name is ExitCodeName => name in EXIT_CODES;
  return Object.entries(EXIT_CODES)
    .flatMap(([name, code]) => (isName(name) ? [{ name, code, meaning: EXIT_CODE_MEANINGS[name] }] : []))
    .sort((a, b) => a.code - b.code);
}

/** The `Exit codes:` lines of `soup --help`: a meaning longer than `width` wraps under itself. */
export function exitCodesHelp(width = 112): string {
  const indent = ' '.repeat(7);
  return exitCodeList()
    .map(({ code, meaning }) => {
      const lines: string[] = [];
      let line = `  ${String(code).padEnd(5)}`;
      for (const word of meaning.help.split(' ')) {
        if (line.length + 1 + word.length > width && line.trim().length > String(code).length) {
          lines.push(line);
          line = indent + word;
        } else line += (line.endsWith(' ') ? '' : ' ') + word;
      }
      return [...lines, line].join('\n');
    })
    .join('\n');
}

/** Error `code` → exit code. Codes not listed fall back by prefix, then to `internal`. */
const BY_CODE: Record<string, ExitCodeName> = {
  SOUP_USAGE: 'usage',
  SOUP_HUB_TOKEN_MISSING: 'auth',
  SOUP_TRAIN_FAILED: 'train',
  SOUP_RESUME_REFUSED: 'resume',
  SOUP_INTERRUPTED: 'interrupted',
  // @soup/config
  SOUP_CONFIG_INVALID: 'config',
  SOUP_CONFIG_NOT_FOUND: 'config',
  // @soup/batch-probe
  SOUP_NO_BATCH_FITS: 'noFit',
  SOUP_OOM: 'noFit',
  SOUP_BATCH_INVALID_OPTION: 'usage',
  SOUP_BATCH_INVALID_PROBE_OUTCOME: 'internal',
  SOUP_BATCH_CACHE_LOCK_TIMEOUT: 'internal',
  SOUP_BATCH_CACHE_WRITE: 'internal',
  SOUP_BATCH_CACHE_CORRUPT: 'config',
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
  SOUP_HUB_CKPT_COMMIT_QUOTA: 'hub',
  SOUP_HUB_CKPT_STORE_MISSING: 'usage',
  SOUP_HUB_CKPT_PULL_INTEGRITY: 'integrity',
  // @soup/plan
  SOUP_PLAN_BUDGET_UNMEASURED: 'train',
  SOUP_PLAN_USAGE: 'usage',
  // @soup/tune
  SOUP_TUNE_NOTHING_TIMED: 'usage',
  SOUP_TUNE_NOTHING_CHOSEN: 'internal',
  // @soup/supervisor
  SOUP_SUPERVISOR_USAGE: 'usage',
  SOUP_SUPERVISOR_LOCKED: 'usage',
  SOUP_SUPERVISOR_RESUME_REFUSED: 'resume',
  SOUP_SUPERVISOR_MICRO_AGREEMENT: 'usage',
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
  SOUP_GRAD_CKPT_BAD_TIER: 'config',
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
