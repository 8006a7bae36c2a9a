// What the parent sends a probe worker (stdin, JSON) and what the worker answers (fd 3, JSON).

export interface OrtSessionJobOptions {
  intraOpNumThreads?: number;
  interOpNumThreads?: number;
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  extra?: Record<string, unknown>;
}

export interface CudaJob {
  deviceId: number;
  nvidiaSmiPath: string;
  gpuMemLimitBytes: number | null;
}

/** One `session.run` of a model file on a synthetic batch planned from its input metadata. */
export interface OrtJob {
  kind: 'ort';
  modelPath: string;
  maxLength: number;
  padId: number;
  vocabSize: number;
  /** Session options (the worker adds the execution provider for the job's device). */
  session: OrtSessionJobOptions;
  /** Inputs fed a constant instead of the planned fill (e.g. the training graph's `lr`, `step`). */
  overrides: Record<string, number>;
}

/**
 * Calibration of a train-step probe: build the onnx-train graph, write it to `modelPath`
 * and create its session with onnx-train's session options. Trials then run that file as an
 * {@link OrtJob} with the same options.
 */
export interface TrainStepJob {
  kind: 'train-step';
  /** TrainStepJobOptions of _train-step-runner.ts, as JSON. */
  step: Record<string, unknown>;
  modelPath: string;
  maxLength: number;
  padId: number;
  vocabSize: number;
}

/**
 * A segmented @soup/onnx-train step (activation offloading): the child builds the step itself
 * (a session for the segments, an activation store per step) and runs one step on a synthetic
 * batch; calibration builds it without a step.
 */
export interface SegmentedStepJob {
  kind: 'segmented-step';
  /** TrainStepJobOptions of _train-step-runner.ts plus `offload`, as JSON. */
  step: Record<string, unknown>;
  maxLength: number;
  vocabSize: number;
}

export interface WorkerJob {
  /** `calibrate`: load and build the batch, report the baseline, no step. `step`: run one step. */
  mode: 'calibrate' | 'step';
  batchSize: number;
  device: 'cpu' | 'cuda';
  /** CPU budget fixed by the caller; null = what the child can reach right before the step. */
  budgetBytes: number | null;
  cuda: CudaJob | null;
  work: OrtJob | TrainStepJob | SegmentedStepJob;
}

export interface CpuMeasurement {
  /** VmSize right before the step: what RLIMIT_AS already counts. */
  baselineVmBytes: number;
  /** VmRSS right before the step. */
  baselineRssBytes: number;
  /** VmHWM after the step. */
  peakRssBytes: number;
  /** VmPeak after the step. */
  vmPeakBytes: number;
  /** Whether VmHWM was reset right before the step (clear_refs); if not, setup peaks count too. */
  peakReset: boolean;
  /** The budget used: the job's, or reachable memory read in the child before the step. */
  budgetBytes: number;
  budgetSource: 'given' | 'cgroup-v2' | 'cgroup-v1' | 'meminfo';
}

export interface CudaMeasurement {
  /** free + held before the step (capped by gpuMemLimitBytes), null when the driver cannot answer. */
  budgetBytes: number | null;
  /** This process's used memory on the device after the step, null when the driver cannot answer. */
  peakBytes: number | null;
  /** Why a figure is missing, or how the trial was judged when not per process. */
  note?: string;
  /** Which reading judged the step (absent from older workers: per process). */
  measurement?: 'cuda-per-process' | 'cuda-device-delta' | 'exceptions-only';
  /** Device-delta: the GPU had (almost) nothing free after the step (WDDM spills instead of failing). */
  deviceFull?: boolean;
}

export interface WorkerSuccess {
  ok: true;
  mode: 'calibrate' | 'step';
  pid: number;
  /** Process start → ready to step (runtime import, session create, batch built). */
  setupMs: number;
  /**
   * Where the child's time went, as epoch milliseconds (performance.timeOrigin + now): the process
   * started, the worker's own code began (node boot + module load done), the job was read,
   * onnxruntime was imported, the session and the batch were ready, the result was sent.
   */
  marks?: {
    processStart: number;
    main: number;
    jobRead: number;
    runtime: number;
    session?: number;
    ready: number;
    sent: number;
  };
  /** The step alone. */
  stepMs: number;
  /** Bytes of the synthetic batch. */
  feedBytes: number;
  /** The part of `feedBytes` that grows with the batch size. */
  batchedFeedBytes: number;
  cpu: CpuMeasurement;
  cuda: CudaMeasurement | null;
  notes: string[];
  /** Calibration of a train-step job: the job every trial runs. */
  prepared?: OrtJob;
}

export interface WorkerFailure {
  ok: false;
  pid: number;
  /** Where it failed: before the step (setup) or in it. */
  phase: 'setup' | 'step';
  error: { name: string; message: string; stack?: string };
}

export type WorkerResult = WorkerSuccess | WorkerFailure;
