// The memory budget soup's own trainer is held to in a session.
import type { PreparedRun } from './prepare-run';
import type { MemoryHoldOptions } from './session-memory-watch';

/** The budget the trainer's peak is held to: training.memory_budget, else what can be reached, else the GPU's. */
export function trainBudgetHold(prepared: PreparedRun, maxMemory: string | undefined): MemoryHoldOptions {
  return {
    budgetBytes: prepared.budgetBytes,
    givenAs: 'memory_budget',
    device: prepared.identity.device === 'cuda' ? 'cuda' : 'cpu',
    deviceBytes: () => prepared.identity.gpuMemoryGb * 2 ** 30,
    maxMemory,
    hint: 'set training.memory_budget',
  };
}
