import { InvalidBatchOptionError } from './errors';

function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return `the boolean ${value}`;
  return String(value);
}

/** A positive safe integer; booleans, strings, NaN, floats rejected with an error naming the field. */
export function positiveInt(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidBatchOptionError(
      `${field} must be a positive integer (got ${shown(value)}); pass e.g. ${field}: 8`,
      { field },
    );
  }
  return value;
}

/** A non-negative safe integer. */
export function nonNegativeInt(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidBatchOptionError(`${field} must be an integer >= 0 (got ${shown(value)})`, { field });
  }
  return value;
}

/** Any safe integer (the cache key's numeric fields: Python's `int`, booleans excluded). */
export function integer(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidBatchOptionError(`${field} must be an integer (got ${shown(value)})`, { field });
  }
  return value;
}

/** A string (empty allowed unless `nonEmpty`). */
export function string(field: string, value: unknown, nonEmpty = false): string {
  if (typeof value !== 'string' || (nonEmpty && value === '')) {
    throw new InvalidBatchOptionError(
      `${field} must be a ${nonEmpty ? 'non-empty ' : ''}string (got ${shown(value)})`,
      { field },
    );
  }
  return value;
}

/** A boolean or undefined (then `fallback`). */
export function optionalBoolean(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new InvalidBatchOptionError(`${field} must be true or false (got ${shown(value)})`, { field });
  }
  return value;
}

/** A function or undefined. */
export function optionalFunction<T>(field: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new InvalidBatchOptionError(`${field} must be a function (got ${typeof value})`, { field });
  }
  return value;
}
