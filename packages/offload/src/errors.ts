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
  override name = 'OffloadError';
  readonly code: OffloadErrorCode;
  constructor(code: OffloadErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A store or `withOffload` was opened with a bad target or save dir (the message names the field and the fix). */
export class OffloadConfigError extends OffloadError {
  override name = 'OffloadConfigError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_CONFIG_INVALID', message, options);
  }
}

/** `pack` got something that is not a `{dtype, dims, data}` tensor the store can round-trip. */
export class TensorFormatError extends OffloadError {
  override name = 'TensorFormatError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_BAD_TENSOR', message, options);
  }
}

/** `pack` / `unpack` on a store that was closed (its scratch files are gone). */
export class StoreClosedError extends OffloadError {
  override name = 'StoreClosedError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_STORE_CLOSED', message, options);
  }
}

/** `unpack` of a handle that was already unpacked or belongs to another store. */
export class HandleError extends OffloadError {
  override name = 'HandleError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_BAD_HANDLE', message, options);
  }
}

/** A disk handle's scratch file is gone (deleted by someone else, or swept). */
export class ScratchFileMissingError extends OffloadError {
  override name = 'ScratchFileMissingError';
  /** The file that was expected. */
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_SCRATCH_MISSING', message, options);
    this.path = path;
  }
}

/** A disk handle's scratch file has the wrong size or could not be read. */
export class ScratchFileCorruptError extends OffloadError {
  override name = 'ScratchFileCorruptError';
  /** The file that was read. */
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super('SOUP_OFFLOAD_SCRATCH_CORRUPT', message, options);
    this.path = path;
  }
}
