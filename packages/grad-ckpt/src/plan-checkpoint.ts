import { pyRepr } from './_args';
import { GranularityError } from './errors';
import type { Granularity } from './types';

/** Parameters of {@link planCheckpoint}. */
export interface PlanCheckpointParams {
  /**
   * Every module name of the model, in registration (depth-first) order, like PyTorch's
   * `named_modules()` or onnx-train's `wte, wpe, h.0, h.0.attn, h.0.mlp, h.1, …, ln_f, lm_head`.
   */
  moduleNames: readonly string[];
  /** `'full'`, `'medium'` or `'selective'`; anything else throws {@link GranularityError}. */
  granularity: Granularity | (string & {}) | null | undefined;
}

const GRANULARITIES: ReadonlySet<string> = new Set(['selective', 'medium', 'full']);
/** A block: the name has a dot and its last segment is a number (`h.3`, `model.layers.12`). */
const BLOCK = /\.([0-9]+)$/;

/**
 * The module names to recompute for a granularity — the selection of the Python original's
 * `install_selective_hooks`, as a plan instead of hooks:
 * - only names whose last dot-segment is a number are blocks (`h.0`, `model.layers.7`);
 * - `'full'`: every block;
 * - `'medium'`: every other block (the 1st, 3rd, 5th …), counting across all blocks in order;
 * - `'selective'`: for each block, every descendant whose name relative to the block contains
 *   `attn` or `attention` (case-insensitive), e.g. `h.0.attn`, `model.layers.0.self_attn`.
 *
 * Names are returned in the order the original would hook them, each once (the original would
 * hook a module listed twice twice; a plan lists it once).
 *
 * Accepts `planCheckpoint({moduleNames, granularity})` or `planCheckpoint(moduleNames, granularity)`.
 * @throws {GranularityError} `granularity must be one of selective/medium/full, got 'x'`.
 */
export function planCheckpoint(params: PlanCheckpointParams): string[];
export function planCheckpoint(
  moduleNames: readonly string[],
  granularity: PlanCheckpointParams['granularity'],
): string[];
export function planCheckpoint(
  first: PlanCheckpointParams | readonly string[],
  granularityArg?: PlanCheckpointParams['granularity'],
): string[] {
  const { moduleNames, granularity } = isNameList(first) ? { moduleNames: first, granularity: granularityArg } : first;
  if (typeof granularity !== 'string' || !GRANULARITIES.has(granularity)) {
    throw new GranularityError(`granularity must be one of selective/medium/full, got ${pyRepr(granularity)}`, {
      granularity,
    });
  }
  const plan: string[] = [];
  const seen = new Set<string>();
  const add = (name: string): void => {
    if (!seen.has(name)) {
      seen.add(name);
      plan.push(name);
    }
  };

  let layerIndex = 0;
  for (const name of moduleNames) {
    if (!BLOCK.test(name)) continue;
    if (granularity === 'full') {
      add(name);
    } else if (granularity === 'medium') {
      if (layerIndex % 2 === 0) add(name);
      layerIndex += 1;
    } else {
      const prefix = `${name}.`;
      for (const other of moduleNames) {
        if (!other.startsWith(prefix)) continue;
        const relative = other.slice(prefix.length).toLowerCase();
        if (relative.includes('attn') || relative.includes('attention')) add(other);
      }
    }
  }
  return plan;
}

function isNameList(value: PlanCheckpointParams | readonly string[]): value is readonly string[] {
  return Array.isArray(value);
}
