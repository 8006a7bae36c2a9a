// The memory budget a trainer command (`soup run`'s) is held to in a session.
import { deviceIdentity } from '@soup/cuda-probe';
import type { MemoryHoldOptions } from './session-memory-watch';

/** Options of {@link commandBudgetHold}. */
export interface CommandBudgetHoldOptions {
  /** Where the trainer runs. */
  device: { kind: 'cpu' | 'cuda'; id: number };
  /** The budget given (a flag), or null. */
  budgetBytes: number | null;
  /** `--max-memory` as given: a size or a fraction of the budget. */
  maxMemory: string | undefined;
  /** How a person gives a budget, for the line that says none is known (e.g. `pass --budget`). */
  hint: string;
  /** For the GPU's identity. @default process.env */
  env?: Record<string, string | undefined>;
}

/**
 * The budget a trainer command's peak is held to: the one given, else on the CPU what can be reached, else the GPU's
 * memory (its identity read once; unknown when that fails, and the budget with it).
 */
export function commandBudgetHold(p: CommandBudgetHoldOptions): MemoryHoldOptions {
  const { kind, id } = p.device;
  return {
    budgetBytes: p.budgetBytes,
    givenAs: 'flag',
    device: kind,
    deviceBytes: async () => {
      const identity = await deviceIdentity({ device: kind, deviceId: id, env: p.env ?? process.env }).catch(
        () => null,
      );
      return identity && identity.device === 'cuda' ? identity.gpuMemoryGb * 2 ** 30 : null;
    },
    maxMemory: p.maxMemory,
    hint: p.hint,
  };
}
