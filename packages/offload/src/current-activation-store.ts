import { storeContext } from './_context';
import type { ActivationStore } from './activation-store';

/**
 * The store installed by the innermost enclosing {@link withOffload} (across awaits), or
 * `undefined` outside one — how a training step finds where to put its saved activations, like
 * the original's saved-tensor hooks.
 */
export function currentActivationStore(): ActivationStore | undefined {
  return storeContext.getStore();
}
