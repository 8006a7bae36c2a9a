// The budget a session's trainer tree is held to, and the --max-memory line inside it. How memory is read
// (reachable memory, the GPU's size) is the caller's: it is injected, as every measurement is.
import { SupervisorUsageError } from './errors';
import type { BudgetSource } from './session-result';

/** Options of {@link resolveMemoryBudget}. */
export interface ResolveMemoryBudgetOptions {
  /** The budget the user gave (bytes), or null. */
  budgetBytes: number | null;
  /** What a given budget is called in the result: a config field or a flag. */
  givenAs: 'memory_budget' | 'flag';
  /** Where the trainer runs. */
  device: 'cpu' | 'cuda';
  /** The memory reachable now on the CPU (may throw: no budget then). */
  reachableBytes: () => number;
  /** The GPU's memory (null: unknown, no budget then). */
  deviceBytes: () => Promise<number | null> | number | null;
}

/** The budget given, else on the CPU the memory reachable now, else the GPU's memory; with where it came from. */
export async function resolveMemoryBudget(
  o: ResolveMemoryBudgetOptions,
): Promise<{ budgetBytes: number | null; source: BudgetSource | null }> {
  if (o.budgetBytes !== null) return { budgetBytes: o.budgetBytes, source: o.givenAs };
  if (o.device === 'cpu') {
    try {
      return { budgetBytes: o.reachableBytes(), source: 'reachable' };
    } catch {
      return { budgetBytes: null, source: null };
    }
  }
  const bytes = await o.deviceBytes();
  return bytes === null ? { budgetBytes: null, source: null } : { budgetBytes: bytes, source: 'device' };
}

/**
 * A max-memory value: a size (`6GiB`, read by `parseBytes`) or a fraction of the budget (`0.9`, `90%`); null when
 * not given, or a fraction with no known budget.
 */
export function resolveMaxMemory(
  value: unknown,
  budgetBytes: number | null,
  parseBytes: (t: string) => number | undefined,
): number | null {
  if (value === undefined || value === null) return null;
  const text = String(value).trim();
  const pct = /^([0-9]+(?:\.[0-9]+)?)\s*%$/.exec(text);
  const fraction = pct ? Number(pct[1]) / 100 : /^0?\.[0-9]+$|^1(\.0+)?$/.test(text) ? Number(text) : undefined;
  if (fraction !== undefined) {
    if (budgetBytes === null) return null;
    return Math.floor(fraction * budgetBytes);
  }
  return parseBytes(text) ?? null;
}

/**
 * `--max-memory` in bytes, or null when not given; a value that is neither a size nor a fraction, or a fraction with
 * no known budget, is refused naming where a budget comes from (`budgetHint`: a flag or a config field).
 */
export function maxMemoryBytesOf(
  value: string | undefined,
  budgetBytes: number | null,
  budgetHint: string,
  parseBytes: (t: string) => number | undefined,
): number | null {
  const bytes = resolveMaxMemory(value, budgetBytes, parseBytes);
  if (value !== undefined && bytes === null) {
    throw new SupervisorUsageError(
      `--max-memory ${value}: give a size like 6GiB, or a fraction like 0.9 or 90% of the budget (a ` +
        `fraction needs a known budget: ${budgetHint})`,
      { field: 'maxMemory' },
    );
  }
  return bytes;
}
