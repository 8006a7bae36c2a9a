// A session's store: the one named (a flag or the config), else a directory beside the run's output folder.
import { defaultStoreDir, openCheckpointStore, type OpenCheckpointStoreOptions } from './open-checkpoint-store';
import type { CheckpointStore } from './types';

/** Options of {@link openSessionStore}. */
export interface OpenSessionStoreOptions extends Omit<OpenCheckpointStoreOptions, 'repo' | 'needsWrite'> {
  /** `user/name` or `file://path`; undefined: a directory beside `output` ({@link defaultStoreDir}). */
  repo: string | undefined;
  /** The run's output folder. */
  output: string;
  /** How a directory store's path is shown. @default as typed */
  show?: (dir: string) => string;
}

/** The store a session writes to, and how messages name it. */
export interface SessionStore {
  store: CheckpointStore;
  /** `directory <where>` for a directory store, else the store's description. */
  storeName: string;
  /** A directory store's path as shown, else the store's description. */
  where: string;
}

/** Opens the session's store for writing (see the file comment). */
export function openSessionStore(p: OpenSessionStoreOptions): SessionStore {
  const { output, show, ...rest } = p;
  // The default store sits beside the output folder, not inside it: `rm -rf <output>` keeps the checkpoints.
  const repo = p.repo ?? `file://${defaultStoreDir(output)}`;
  const store = openCheckpointStore({ ...rest, repo, needsWrite: true });
  const where = store.kind === 'dir' ? (show ?? ((d) => d))(repo.replace(/^file:\/\//, '')) : store.description;
  return { store, where, storeName: store.kind === 'dir' ? `directory ${where}` : store.description };
}
