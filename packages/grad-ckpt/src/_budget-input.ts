import { BudgetPlanError } from './errors';
import type { BudgetBlock } from './types';

/**
 * Throws {@link BudgetPlanError} naming the field when the blocks cannot be planned with: names
 * non-empty and unique, `bytesKey` a finite byte count ≥ 0, `recomputeCostMs` absent or ≥ 0.
 */
export function checkBlocks(
  blocks: readonly BudgetBlock[] | readonly { name: string; staticBytes: number }[],
  bytesKey: 'activationBytes' | 'staticBytes' = 'activationBytes',
): void {
  if (!Array.isArray(blocks)) {
    throw new BudgetPlanError(
      bytesKey === 'activationBytes'
        ? 'blocks must be an array of {name, activationBytes, recomputeCostMs?}'
        : `blocks must be an array of {name, ${bytesKey}}`,
      { field: 'blocks' },
    );
  }
  const names = new Set<string>();
  (blocks as readonly (Partial<BudgetBlock> & { staticBytes?: number })[]).forEach((block, i) => {
    if (typeof block?.name !== 'string' || block.name === '') {
      throw new BudgetPlanError(`blocks[${i}].name must be a non-empty module name such as 'h.${i}'`, {
        field: `blocks[${i}].name`,
      });
    }
    if (names.has(block.name)) {
      throw new BudgetPlanError(`blocks[${i}].name '${block.name}' appears twice; list each block once`, {
        field: `blocks[${i}].name`,
      });
    }
    names.add(block.name);
    checkBytes(`blocks[${i}].${bytesKey}`, block[bytesKey], false);
    const cost = block.recomputeCostMs;
    if (cost !== undefined && !(typeof cost === 'number' && Number.isFinite(cost) && cost >= 0)) {
      throw new BudgetPlanError(
        `blocks[${i}].recomputeCostMs must be a finite number ≥ 0 (ms) or left out, got ${String(cost)}`,
        { field: `blocks[${i}].recomputeCostMs` },
      );
    }
  });
}

/** Throws {@link BudgetPlanError} unless `value` is a finite byte count (≥ 0, or > 0 when `positive`). */
export function checkBytes(field: string, value: unknown, positive: boolean): asserts value is number {
  const ok = typeof value === 'number' && Number.isFinite(value) && (positive ? value > 0 : value >= 0);
  if (!ok) {
    throw new BudgetPlanError(
      `${field} must be a finite number of bytes ${positive ? '> 0' : '≥ 0'}, got ${String(value)}`,
      { field },
    );
  }
}
