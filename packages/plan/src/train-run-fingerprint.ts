// The run soup train trains: its fingerprint from the config and the bytes of its data files.
import { runFingerprint, type RunFingerprint, type SoupConfig } from '@soup/config';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** The run's fingerprint (@soup/config's runFingerprint) with data.train and data.val hashed as they are now. */
export function trainRunFingerprint(config: SoupConfig): RunFingerprint {
  const trainSha256 = sha256File(config.data.trainPath);
  const valSha256 = config.data.valPath ? sha256File(config.data.valPath) : null;
  return runFingerprint({ config, trainSha256, valSha256 });
}
