import { InvalidArgumentError } from 'commander';
import { parseBytes } from './parse-bytes';
import { parseDuration } from './parse-duration';

/** Commander parser: an integer >= min. */
export function intAtLeast(min: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^\s*-?\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected an integer >= ${min}, got "${value}"`);
    }
    return n;
  };
}

/** Commander parser: a memory size such as 6GiB, 512MiB or a byte count. */
export function bytesArg(value: string): number {
  const n = parseBytes(value);
  if (n === undefined) throw new InvalidArgumentError(`expected a size like 6GiB, 512MiB or 1.5GB, got "${value}"`);
  return n;
}

/** Commander parser: cpu, cuda or cuda:N. */
export function deviceArg(value: string): string {
  if (!/^(cpu|cuda|cuda:\d+)$/.test(value))
    throw new InvalidArgumentError(`expected cpu, cuda or cuda:N, got "${value}"`);
  return value;
}

/** Commander parser: one of a fixed set. */
export function oneOf<T extends string>(...allowed: T[]): (value: string) => T {
  return (value: string) => {
    if (!(allowed as string[]).includes(value))
      throw new InvalidArgumentError(`expected one of ${allowed.join(', ')}, got "${value}"`);
    return value as T;
  };
}

/** Commander parser: a duration such as 8h45m, 90s or 500ms (a bare number is seconds); returns ms. */
export function durationArg(value: string): number {
  const n = parseDuration(value);
  if (n === undefined)
    throw new InvalidArgumentError(`expected a duration like 8h45m, 90m, 30s or 500ms, got "${value}"`);
  return n;
}
