// Option checks shared by the probe factories. Each throws a ProbeOptionsError naming the field.
import { ProbeOptionsError } from './errors';

function describe(value: unknown): string {
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (value === null) return 'null';
  return `${typeof value} ${String(value)}`;
}

export function integerAtLeast(field: string, value: unknown, min: number, hint = ''): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new ProbeOptionsError(
      `${field} must be an integer >= ${min} (got ${describe(value)})${hint ? `; ${hint}` : ''}`,
      { field },
    );
  }
  return value;
}

export function optionalIntegerAtLeast(field: string, value: unknown, min: number, fallback: number): number {
  return value === undefined ? fallback : integerAtLeast(field, value, min);
}

export function optionalBytes(field: string, value: unknown): number | null {
  if (value === undefined || value === null) return null;
  return integerAtLeast(field, value, 1, 'give a byte count, e.g. 8 * 2 ** 30 for 8 GiB');
}

export function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ProbeOptionsError(
      `${field} must be one of ${allowed.map((a) => `'${a}'`).join(', ')} (got ${describe(value)})`,
      { field },
    );
  }
  return value as T;
}

export function optionalBoolean(field: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean')
    throw new ProbeOptionsError(`${field} must be true or false (got ${describe(value)})`, { field });
  return value;
}

export function requireObject(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProbeOptionsError(`${field} must be an options object (got ${describe(value)})`, { field });
  }
  return value as Record<string, unknown>;
}

/** A candidate batch size handed to a probe: a positive integer, never a boolean. */
export function batchSizeArg(value: unknown): number {
  return integerAtLeast('batchSize', value, 1, 'the probe is called with a positive integer batch size');
}
