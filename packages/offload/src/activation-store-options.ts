// The public option and handle types of ActivationStore.
import type { OffloadTarget, TensorDtype } from './types';

/** Options of {@link ActivationStore}. */
export interface ActivationStoreOptions {
  /** Where packed tensors live: `'keep'` (reference), `'cpu'` (private copy in RAM) or `'disk'` (scratch files). */
  target: OffloadTarget;
  /**
   * Directory for `'disk'` scratch files; required for `'disk'`, ignored otherwise. Resolved against
   * `cwd` with symlinks followed and refused unless strictly below the real `cwd`; created (mode 0700)
   * when missing.
   * @default null
   */
  saveDir?: string | null;
  /** Working directory `saveDir` must stay under. @default process.cwd() */
  cwd?: string;
  /**
   * How each scratch file is flushed. `'data'`: fdatasync, so its pages are written to the device
   * and become clean page cache, which the kernel can drop under memory pressure — without it they
   * stay dirty, and dirty pages count against a memory limit (a cgroup) like the tensor did: nothing
   * left RAM. `pack` starts it on a libuv pool thread and returns (it runs while the next segment
   * computes; one flush per file costs a journal commit, ~10 ms, and waiting for each doubled the
   * disk step's time); `packAsync` awaits it. `true`: fsync awaited before `pack` returns (metadata
   * too). `false`: no flush (the tensor stays in dirty page cache until the kernel writes it back
   * or the file is deleted).
   * @default 'data'
   */
  fsync?: boolean | 'data';
  /**
   * `'disk'`: write each tensor to an anonymous file (Linux `O_TMPFILE`) in `saveDir` — no name,
   * only a descriptor the store holds until `unpack`. Nothing can be left behind: when the process
   * dies, even by SIGKILL or the OOM killer, the kernel frees the files. Where the system or file
   * system has no `O_TMPFILE`, named files are used (`usesAnonymousFiles` turns false). Costs one
   * open descriptor per packed tensor.
   * @default false
   */
  anonymousFiles?: boolean;
  /** Called once when the save dir is on a RAM-backed file system (tmpfs, ramfs). @default a `process.emitWarning` */
  onWarning?: (message: string) => void;
  /** Sweep scratch files of dead processes from `saveDir` when the store opens. @default true */
  sweep?: boolean;
  /** Called when a disk write fails and the tensor is kept in memory instead. @default undefined */
  onWriteError?: (error: Error, byteLength: number) => void;
}

/** An opaque ticket for one packed tensor; unpack it exactly once, on the store that made it. */
export interface ActivationHandle {
  /** Sequence number within its store. */
  readonly id: number;
  readonly dtype: TensorDtype;
  readonly dims: readonly number[];
  /** Bytes of tensor data. */
  readonly byteLength: number;
  /** `'disk'` when the data is in a scratch file, `'memory'` otherwise (keep, cpu, or a write fallback). */
  readonly location: 'memory' | 'disk';
}
