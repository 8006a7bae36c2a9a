/** One file as a store lists it. */
export interface StoreEntry {
  /** Path in the repo, `/`-separated, e.g. `ckpt/checkpoint-120/model.safetensors`. */
  path: string;
  /** Size in bytes as the store reports it. */
  sizeBytes: number;
  /**
   * sha256 of the content when the store knows it without reading the bytes
   * (the LFS oid on the Hub). Absent for small regular files and for directory stores.
   */
  sha256?: string;
  /** When the store last wrote the file (ISO 8601): set by `stat` when asked for `times`. */
  modifiedAt?: string;
  /**
   * git blob id (sha1 of `blob <size>\0` + bytes) of a regular, non-LFS file when the store lists it (the Hub's
   * `oid`).
   */
  gitOid?: string;
}

/** One change inside a store commit. */
export type StoreOperation =
  | { kind: 'put'; path: string /** Local file to upload. */; localPath: string }
  | { kind: 'put'; path: string /** In-memory content. */; bytes: Uint8Array }
  | { kind: 'delete'; path: string };

/** Progress inside one commit, awaited by the store (a slow callback slows the commit). */
export type CommitProgress =
  /** About to make the commit visible (Hub: the commit call; directory: staged files about to be renamed in). */
  | { stage: 'commit' }
  /** One file landed (Hub: an LFS object uploaded; directory: a file renamed into place or deleted). */
  | { stage: 'file'; kind: 'put' | 'delete'; path: string };

/** One compare-and-swap condition of a commit. */
export interface IfMatch {
  path: string;
  /** sha256 of the content `path` must hold, or null for "absent". */
  sha256: string | null;
}

export interface StoreCommitParams {
  /** Commit title. */
  message: string;
  operations: StoreOperation[];
  /** Awaited on each progress event. */
  onProgress?: (event: CommitProgress) => void | Promise<void>;
  /**
   * Compare-and-swap: commit only while `path` still holds content with this sha256 (null: while it is
   * absent); a list means every condition must hold. Another writer's change throws ConcurrentWriteError
   * naming it. @default no condition
   */
  ifMatch?: IfMatch | IfMatch[];
  /** Aborts between files and requests. @default none */
  signal?: AbortSignal;
  /** The store's own staging of the local files put (`openStaging`), whose copies the commit may take. */
  staged?: LocalStaging;
}

/** Local files a store copies in while their manifest is built, so a push reads each byte once on its way in. */
export interface LocalStaging {
  /** As `hashFile`: sha256 and size of the bytes staged from `localPath`, its git blob id when asked with its size. */
  hash(localPath: string, gitBlobSizeBytes?: number): Promise<{ sha256: string; sizeBytes: number; gitSha1?: string }>;
  /** Removes the copies no commit took; a push closes it whatever happened. */
  close(): Promise<void>;
}

/**
 * Where checkpoints live: a Hugging Face Hub repo ({@link HubStore}) or a directory ({@link DirStore}).
 * Paths are repo-relative and `/`-separated. Implementations must make each `commit` all-or-nothing
 * as seen by readers as far as the medium allows, and retry transient failures themselves.
 */
export interface CheckpointStore {
  /** `hub` or `dir`. */
  readonly kind: 'hub' | 'dir';
  /** Human description without secrets, e.g. `hub model soup/run-1 @ https://huggingface.co` or `dir /mnt/ckpt`. */
  readonly description: string;
  /** Whether the repo (or directory) exists. Throws on auth failures rather than answering false. */
  exists(): Promise<boolean>;
  /** Creates the repo (or directory); a no-op when it exists. */
  create(): Promise<void>;
  /** Every file under `prefix` (recursive); `[]` when the prefix does not exist. */
  list(params: { prefix: string }): Promise<StoreEntry[]>;
  /** Entries for the given paths that exist (files only), in one call. */
  stat(params: { paths: string[]; times?: boolean }): Promise<StoreEntry[]>;
  /** The whole content of a (small) file, or null when it does not exist. */
  readFile(params: { path: string }): Promise<Uint8Array | null>;
  /**
   * sha256 and size of a file's content as the store serves it (streams a download on the Hub), or null when missing.
   */
  hash(params: { path: string; signal?: AbortSignal }): Promise<{ sizeBytes: number; sha256: string } | null>;
  /** Streams a file to `dest` (created or truncated, fsynced), hashing on the way. */
  download(params: {
    path: string;
    dest: string;
    signal?: AbortSignal;
  }): Promise<{ sizeBytes: number; sha256: string }>;
  /** Applies the operations as one commit (puts first, then deletes). */
  commit(params: StoreCommitParams): Promise<void>;
  /** A staging of local files during the manifest's hash, for the next commit (the directory store's). */
  openStaging?(): LocalStaging;
  /**
   * Bytes the store holds for this repo, history included, where it reports them (the Hub's
   * `usedStorage`); null when it does not say. Absent on stores with no such notion.
   */
  usedStorageBytes?(): Promise<number | null>;
  /** Commits in the store's history, where it says (the Hub); null when it does not. Absent on a directory. */
  historyLength?(): Promise<number | null>;
  /**
   * Rewrites the repo's history as one commit with the current files, so bytes only older commits
   * reach can be freed (the Hub's super-squash). Absent on stores without history (a directory).
   */
  squashHistory?(params: { message: string }): Promise<void>;
}

/** `latest.json`. */
export interface Pointer {
  step: number;
  /** `ckpt/checkpoint-<step>` or `final`. */
  path_in_repo: string;
  /** Run fingerprint. */
  run: string;
  terminal: boolean;
  /** sha256 of the pointed folder's `manifest.json` bytes. */
  manifest_sha256: string;
  /** ISO 8601 time of the write. */
  updated_at: string;
}

/** `manifest.json` of a checkpoint folder. */
export interface Manifest {
  step: number;
  run: string;
  /** Every file of the folder except `manifest.json`, by path relative to the folder. */
  files: Record<string, { size: number; sha256: string }>;
}

/** Where logs go. Lines never contain a token. @default silent */
export interface HubCkptLogger {
  info?: (line: string) => void;
  warn?: (line: string) => void;
}

/** Result of `{errors, warnings}` validators. */
export interface ValidationResult {
  errors: string[];
  warnings: string[];
}
