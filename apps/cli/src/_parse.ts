import { InvalidArgumentError } from 'commander';
import { type DeviceSpec, durationProblem, parseBytes, parseDevice, parseDuration, parseHeadroom } from '@soup/config';

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

/** Commander parser: `--batch-size` of soup run, a positive integer or `auto`. */
export function batchSizeArg(value: string): number | 'auto' {
  if (value === 'auto') return value;
  if (!/^\s*[1-9]\d*\s*$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError(`expected a positive integer or auto, got "${value}"`);
  return Number(value);
}

/** Commander parser: a memory size such as 6GiB, 512MiB or a byte count. */
export function bytesArg(value: string): number {
  const n = parseBytes(value);
  if (n === undefined) throw new InvalidArgumentError(`expected a size like 6GiB, 512MiB or 1.5GB, got "${value}"`);
  return n;
}

export type { DeviceSpec } from '@soup/config';

/** Commander parser: cpu, cuda or cuda:N. */
export function deviceArg(value: string): DeviceSpec {
  const device = parseDevice(value);
  if (device === undefined) throw new InvalidArgumentError(`expected cpu, cuda or cuda:N, got "${value}"`);
  return device;
}

/** Commander parser: a percentage (`10%`) or a fraction (`0.1`) in [0, 1); returns the fraction. */
export function headroomArg(value: string): number {
  const f = parseHeadroom(value);
  if (f === undefined)
    throw new InvalidArgumentError(
      `expected a percentage like 10% (or a fraction like 0.1) below 100%, got "${value}"`,
    );
  return f;
}

/** A list flag given more than once (`--try a=1,2 --try b=x,y`): each value appended. */
export function appendArg(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Commander parser: a duration such as 8h45m, 90s, 500ms or 1d (a bare number is seconds); returns ms. */
export function durationArg(value: string): number {
  const n = parseDuration(value);
  if (n === undefined) throw new InvalidArgumentError(durationProblem(value) ?? value);
  return n;
}

/** `--squash-history [mode]`: bare or `prune` after each prune, `auto` past 500 commits, `off` never. */
export function squashArg(value: string): boolean | 'auto' {
  if (value === 'auto' || value === 'prune' || value === 'off') return value === 'auto' ? 'auto' : value === 'prune';
  throw new InvalidArgumentError(`expected auto, prune or off, got "${value}"`);
}

/** A duration, or 0. */
export function intervalArg(value: string): number {
  return value.trim() === '0' ? 0 : durationArg(value);
}
