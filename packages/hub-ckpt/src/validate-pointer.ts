import { schemaErrors } from './_ajv';
import type { ValidationResult } from './types';

/**
 * Checks a parsed `latest.json` against the shipped schema and its own consistency
 * (`terminal` ⇔ `path_in_repo: "final"`; `ckpt/checkpoint-<n>` names `step` n). Never throws.
 */
export function validatePointer(value: unknown): ValidationResult {
  const errors = schemaErrors('pointer', value);
  const warnings: string[] = [];
  if (errors.length === 0) {
    const p = value as { step: number; path_in_repo: string; terminal: boolean };
    if (p.terminal !== (p.path_in_repo === 'final')) {
      errors.push(
        `pointer: terminal is ${String(p.terminal)} but path_in_repo is "${p.path_in_repo}" (terminal pointers ` +
          `name "final", others a ckpt/ folder)`,
      );
    }
    if (p.path_in_repo !== 'final' && p.path_in_repo !== `ckpt/checkpoint-${p.step}`) {
      errors.push(`pointer: path_in_repo "${p.path_in_repo}" does not match step ${p.step}`);
    }
  }
  return { errors, warnings };
}
