// A corrupt checkpoint met by a pull of what latest.json names is the pull's integrity failure, not a resume refusal.
import { ChecksumError, CorruptCheckpointError, PullIntegrityError } from './errors';

/**
 * `err` as a pull's failure: a pulled file whose hash differs says so itself (its ChecksumError); any other corrupt
 * checkpoint becomes a PullIntegrityError, without the resume advice; other errors pass as they are.
 */
export function asPullFailure(err: unknown): unknown {
  if (!(err instanceof CorruptCheckpointError)) return err;
  if (err.cause instanceof ChecksumError) return err.cause;
  return new PullIntegrityError(`pull refused: ${err.message.replace(/ Refusing to resume.*$/, '')}`, { cause: err });
}
