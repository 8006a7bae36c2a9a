import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActivationStore } from './activation-store';

/** The store installed by the innermost enclosing `withOffload`. */
export const storeContext: AsyncLocalStorage<ActivationStore> = new AsyncLocalStorage<ActivationStore>();
