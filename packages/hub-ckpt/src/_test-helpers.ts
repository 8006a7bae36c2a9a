// Test-only helpers (not exported by index.ts): one store of each kind on real parts.
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startHubServer, useTempDir, type HubServer, type HubServerFaults } from '@soup/test-utils';
import { DirStore } from './dir-store';
import { HubStore, type HubStoreOptions } from './hub-store';
import type { CheckpointStore, LocalStaging, StoreCommitParams } from './types';

export type StoreKind = 'hub' | 'dir';
export const STORE_KINDS: StoreKind[] = ['hub', 'dir'];

export interface TestStore {
  kind: StoreKind;
  /** The store under test (commit calls counted). */
  store: CheckpointStore;
  /** A fresh store on the same repo, as a later session on an empty disk would open it. */
  reopen(): CheckpointStore;
  /** Local scratch dir (the trainer's disk). */
  work: string;
  /** Commits made through `store`. */
  commits(): number;
  /** Warnings and info lines logged by the store. */
  logLines: string[];
  server?: HubServer;
  /** Hub repo id or directory root. */
  location: string;
}

export interface MakeTestStoreOptions {
  faults?: HubServerFaults;
  treePageSize?: number;
  hub?: Partial<HubStoreOptions>;
  /** The Hub test server's clock (its commit quota's hour). @default Date.now */
  serverNow?: () => number;
}

/** Counts commits and passes everything through. */
class CountingStore implements CheckpointStore {
  count = 0;
  constructor(private readonly inner: CheckpointStore) {}
  get kind(): 'hub' | 'dir' {
    return this.inner.kind;
  }
  get description(): string {
    return this.inner.description;
  }
  exists = (): Promise<boolean> => this.inner.exists();
  create = (): Promise<void> => this.inner.create();
  list = (p: { prefix: string }) => this.inner.list(p);
  stat = (p: { paths: string[]; times?: boolean }) => this.inner.stat(p);
  readFile = (p: { path: string }) => this.inner.readFile(p);
  hash = (p: { path: string }) => this.inner.hash(p);
  download = (p: { path: string; dest: string }) => this.inner.download(p);
  commit = async (p: StoreCommitParams): Promise<void> => {
    await this.inner.commit(p);
    this.count++;
  };
  get usedStorageBytes(): (() => Promise<number | null>) | undefined {
    const f = this.inner.usedStorageBytes?.bind(this.inner);
    return f;
  }
  get openStaging(): (() => LocalStaging) | undefined {
    return this.inner.openStaging?.bind(this.inner);
  }
  get historyLength(): (() => Promise<number | null>) | undefined {
    return this.inner.historyLength?.bind(this.inner);
  }
  get squashHistory(): ((p: { message: string }) => Promise<void>) | undefined {
    return this.inner.squashHistory?.bind(this.inner);
  }
}

export async function makeTestStore(kind: StoreKind, opts: MakeTestStoreOptions = {}): Promise<TestStore> {
  const tmp = useTempDir('soup-hub-ckpt-');
  const work = join(tmp, 'work');
  const logLines: string[] = [];
  const logger = { warn: (l: string) => logLines.push(l), info: (l: string) => logLines.push(l) };
  if (kind === 'hub') {
    const server = await startHubServer({
      dir: join(tmp, 'hub'),
      treePageSize: opts.treePageSize ?? 3,
      faults: opts.faults,
      ...(opts.serverNow ? { now: opts.serverNow } : {}),
    });
    onTestFinished(async () => {
      await server.close();
      // The server's own handlers must never have crashed, whatever faults were injected.
      if (server.errors.length > 0)
        throw new Error(`hub test server errors: ${server.errors.map((e) => e.message).join('; ')}`);
    });
    const repo = 'soup-test/ckpt-run';
    const make = (): HubStore =>
      new HubStore({
        repo,
        endpoint: server.url,
        token: server.token,
        retry: { baseDelayMs: 5, maxDelayMs: 3000 },
        logger,
        ...opts.hub,
      });
    const store = new CountingStore(make());
    return { kind, store, reopen: make, work, commits: () => store.count, logLines, server, location: repo };
  }
  const root = join(tmp, 'remote');
  const store = new CountingStore(new DirStore({ root }));
  return {
    kind,
    store,
    reopen: () => new DirStore({ root }),
    work,
    commits: () => store.count,
    logLines,
    location: root,
  };
}
