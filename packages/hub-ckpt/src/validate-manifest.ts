import { schemaErrors } from './_ajv';
import { MANIFEST_NAME } from './_layout';
import { unsafeReason } from './_paths';
import type { ValidationResult } from './types';

/** Checks a parsed `manifest.json` against the shipped schema and refuses unsafe file names. Never throws. */
export function validateManifest(value: unknown): ValidationResult {
  const errors = schemaErrors('manifest', value);
  const warnings: string[] = [];
  const files = (value as { files?: unknown } | null)?.files;
  if (files !== null && typeof files === 'object') {
    for (const name of Object.keys(files)) {
      const reason = unsafeReason(name);
      if (reason !== null) errors.push(`manifest.files: unsafe name ${JSON.stringify(name)} (${reason})`);
      else if (name === MANIFEST_NAME) errors.push('manifest.files: must not list manifest.json itself');
    }
  }
  return { errors, warnings };
}
