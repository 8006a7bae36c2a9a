import { BudgetPlanError } from './errors';
import type { BudgetBlock } from './types';

/** Throws {@link BudgetPlanError} naming the field when the blocks cannot be planned with. */
export function checkBlocks(blocks: readonly BudgetBlock[]): void {
  if (!Array.isArray(blocks)) {
    throw new BudgetPlanError('blocks', 'blocks must be an array of {name, activationBytes, recomputeCostMs?}');
  }
  const names = new Set<string>();
  blocks.forEach((block, i) => {
    if (typeof block?.name !== 'string' || block.name === '') {
      throw new BudgetPlanError(`blocks[${i}].name`, `blocks[${i}].name must be a non-empty module name such as 'h.${i}'`);
    }
    if (names.has(block.name)) {
      throw new BudgetPlanError(`blocks[${i}].name`, `blocks[${i}].name '${block.name}' appears twice; list each block once`);
    }
    names.add(block.name);
    checkBytes(`blocks[${i}].activationBytes`, block.activationBytes, false);
    const cost = block.recomputeCostMs;
    if (cost !== undefined && !(typeof cost === 'number' && Number.isFinite(cost) && cost >= 0)) {
      throw new BudgetPlanError(
        `blocks[${i}].recomputeCostMs`,
        `blocks[${i}].recomputeCostMs must be a finite number ≥ 0 (ms) or left out, got ${String(cost)}`,
      );
    }
  });
}

/** Throws {@link BudgetPlanError} unless `value` is a finite byte count (≥ 0, or > 0 when `positive`). */
export function checkBytes(field: string, value: unknown, positive: boolean): asserts value is number {
  const ok = typeof value === 'number' && Number.isFinite(value) && (positive ? value > 0 : value >= 0);
  if (!ok) {
    throw new BudgetPlanError(
      field,
      `${field} must be a finite number of bytes ${positive ? '> 0' : '≥ 0'}, got ${String(value)}`,
    );
  }
}
