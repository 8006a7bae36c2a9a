/**
 * Process-wide registry of open stores, kept on `globalThis` so that two copies of this module
 * in one process (e.g. `src` in a test and `dist` through another package) still see each other's
 * live stores and never sweep each other's files.
 */
interface Closable {
  readonly token: string;
  close(): void;
}

interface Registry {
  open: Map<string, Closable>;
  exitHookInstalled: boolean;
}

const KEY = Symbol.for('@soup/offload.registry.v1');

function registry(): Registry {
  const g = globalThis as { [KEY]?: Registry };
  g[KEY] ??= { open: new Map(), exitHookInstalled: false };
  return g[KEY];
}

/** Records a store as live; on process exit every store still open is closed (its files deleted). */
export function registerStore(store: Closable): void {
  const reg = registry();
  reg.open.set(store.token, store);
  if (!reg.exitHookInstalled) {
    reg.exitHookInstalled = true;
    process.on('exit', () => {
      for (const s of [...reg.open.values()]) {
        try {
          s.close();
        } catch {
          // best effort at exit
        }
      }
    });
  }
}

export function unregisterStore(token: string): void {
  registry().open.delete(token);
}

/** Whether a store token of this process belongs to a store that is still open. */
export function isLiveToken(token: string): boolean {
  return registry().open.has(token);
}
