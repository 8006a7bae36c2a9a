/** Stable error codes of @soup/offload. */
export type OffloadErrorCode =
  | 'SOUP_OFFLOAD_CONFIG_INVALID'
  | 'SOUP_OFFLOAD_BAD_TENSOR'
  | 'SOUP_OFFLOAD_STORE_CLOSED'
  | 'SOUP_OFFLOAD_BAD_HANDLE'
  | 'SOUP_OFFLOAD_SCRATCH_MISSING'
  | 'SOUP_OFFLOAD_SCRATCH_CORRUPT';

/** Base class of every error thrown by @soup/offload. */
export class OffloadError extends Error {
  override readonly name: string = 'OffloadError';
  readonly code: OffloadErrorCode;
  constructor(message: string, options: { code: OffloadErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** A store or `withOffload` was opened with a bad target or save dir (the message names the field and the fix). */
export class OffloadConfigError extends OffloadError {
  override readonly name = 'OffloadConfigError';
  declare readonly code: 'SOUP_OFFLOAD_CONFIG_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_CONFIG_INVALID', cause: options?.cause });
  }
}

/** `pack` got something that is not a `{dtype, dims, data}` tensor the store can round-trip. */
export class TensorFormatError extends OffloadError {
  override readonly name = 'TensorFormatError';
  declare readonly code: 'SOUP_OFFLOAD_BAD_TENSOR';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_BAD_TENSOR', cause: options?.cause });
  }
}

/** `pack` / `unpack` on a store that was closed (its scratch files are gone). */
export class StoreClosedError extends OffloadError {
  override readonly name = 'StoreClosedError';
  declare readonly code: 'SOUP_OFFLOAD_STORE_CLOSED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_STORE_CLOSED', cause: options?.cause });
  }
}

/** `unpack` of a handle that was already unpacked or belongs to another store. */
export class HandleError extends OffloadError {
  override readonly name = 'HandleError';
  declare readonly code: 'SOUP_OFFLOAD_BAD_HANDLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_BAD_HANDLE', cause: options?.cause });
  }
}

/** A disk handle's scratch file is gone (deleted by someone else, or swept). */
export class ScratchFileMissingError extends OffloadError {
  override readonly name = 'ScratchFileMissingError';
  declare readonly code: 'SOUP_OFFLOAD_SCRATCH_MISSING';
  /** The file that was expected. */
  readonly path: string;
  constructor(message: string, options: { path: string; cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_SCRATCH_MISSING', cause: options.cause });
    this.path = options.path;
  }
}

/** A disk handle's scratch file has the wrong size or could not be read. */
export class ScratchFileCorruptError extends OffloadError {
  override readonly name = 'ScratchFileCorruptError';
  declare readonly code: 'SOUP_OFFLOAD_SCRATCH_CORRUPT';
  /** The file that was read. */
  readonly path: string;
  constructor(message: string, options: { path: string; cause?: unknown }) {
    super(message, { code: 'SOUP_OFFLOAD_SCRATCH_CORRUPT', cause: options.cause });
    this.path = options.path;
  }
}
