// What a worker probe (createOrtProbe, createTrainStepProbe) runs its children with.
import type { CudaJob, OrtJob, SegmentedStepJob, TrainStepJob } from './_protocol';

/** The resolved options of one worker probe. */
export interface WorkerProbeConfig {
  /** Names the child in errors: "ORT probe child", "train-step probe child". */
  what: string;
  device: 'cpu' | 'cuda';
  work: OrtJob | TrainStepJob | SegmentedStepJob;
  budgetBytes: number | null;
  cuda: CudaJob | null;
  timeoutMs: number;
  env: NodeJS.ProcessEnv;
  cwd: string | undefined;
  signal: AbortSignal | undefined;
  nodePath: string;
  nodeArgs: string[];
  workerPath: string;
  addressSpaceLimit: 'auto' | 'prlimit' | 'ulimit' | 'off';
  /** CPU hard cap: RLIMIT_AS or a memory cgroup (see `WorkerProbeOptions.hardCap`). @default 'address-space' */
  hardCap?: 'address-space' | 'memory-cgroup';
  /** Intra-op threads of the child's session (for the headroom of the limit). */
  threads: number | undefined;
}
