/** Stable error codes of @soup/cuda-probe. */
export type CudaProbeErrorCode =
  | 'SOUP_PROBE_INVALID_OPTIONS'
  | 'SOUP_PROBE_TIMEOUT'
  | 'SOUP_PROBE_CHILD_FAILED'
  | 'SOUP_DEVICE_QUERY_FAILED'
  | 'SOUP_CGROUP_UNAVAILABLE'
  | 'SOUP_PEER_DEPENDENCY_MISSING';

/** Base class of every error this package throws: a stable `code`, the `cause` kept. */
export class CudaProbeError extends Error {
  override readonly name: string = 'CudaProbeError';
  readonly code: CudaProbeErrorCode;
  constructor(message: string, options: { code: CudaProbeErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** Bad options given to a probe factory or a probe call; the message names the field and the fix. */
export class ProbeOptionsError extends CudaProbeError {
  override readonly name = 'ProbeOptionsError';
  declare readonly code: 'SOUP_PROBE_INVALID_OPTIONS';
  readonly field: string;
  constructor(message: string, options: { field: string; cause?: unknown }) {
    super(message, { code: 'SOUP_PROBE_INVALID_OPTIONS', cause: options.cause });
    this.field = options.field;
  }
}

/** The probe child ran past `timeoutMs` and was killed with SIGKILL. */
export class ProbeTimeoutError extends CudaProbeError {
  override readonly name = 'ProbeTimeoutError';
  declare readonly code: 'SOUP_PROBE_TIMEOUT';
  readonly timeoutMs: number;
  readonly batchSize: number;
  readonly stderrTail: string;
  /** Which stream `stderrTail` was taken from (`stdout` when the child wrote nothing on stderr). */
  readonly tailSource: 'stderr' | 'stdout';
  /**
   * @param timeoutName how the caller names the timeout (`timeoutMs` for the library, `--timeout` for soup)
   */
  constructor(
    batchSize: number,
    timeoutMs: number,
    stderrTail: string,
    what = `probe child for batch_size=${batchSize}`,
    timeoutName = 'timeoutMs',
    tailSource: 'stderr' | 'stdout' = 'stderr',
  ) {
    const limit =
      timeoutName === 'timeoutMs' ? `timeoutMs=${timeoutMs}` : `its ${timeoutName} of ${timeoutMs / 1000} s`;
    super(
      `${what} ran past ${limit} and was killed (SIGKILL); ` +
        `raise ${timeoutName} if one step is legitimately this slow` +
        (stderrTail ? `\n--- ${tailSource} tail ---\n${stderrTail}` : ''),
      { code: 'SOUP_PROBE_TIMEOUT' },
    );
    this.timeoutMs = timeoutMs;
    this.batchSize = batchSize;
    this.stderrTail = stderrTail;
    this.tailSource = tailSource;
  }
}

/** The probe child failed for a reason that is not out-of-memory (a crash, a bad model, a bug). */
export class ProbeChildError extends CudaProbeError {
  override readonly name = 'ProbeChildError';
  declare readonly code: 'SOUP_PROBE_CHILD_FAILED';
  readonly batchSize: number;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderrTail: string;
  /** Which stream `stderrTail` was taken from (`stdout` when the child wrote nothing on stderr). */
  readonly tailSource: 'stderr' | 'stdout';
  constructor(
    message: string,
    details: {
      batchSize: number;
      exitCode: number | null;
      signal: NodeJS.Signals | null;
      stderrTail: string;
      tailSource?: 'stderr' | 'stdout';
      cause?: unknown;
    },
  ) {
    super(
      message + (details.stderrTail ? `\n--- ${details.tailSource ?? 'stderr'} tail ---\n${details.stderrTail}` : ''),
      { code: 'SOUP_PROBE_CHILD_FAILED', cause: details.cause },
    );
    this.batchSize = details.batchSize;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stderrTail = details.stderrTail;
    this.tailSource = details.tailSource ?? 'stderr';
  }
}

/** A device query (nvidia-smi, /proc, cgroup files) could not answer where an answer was required. */
export class DeviceQueryError extends CudaProbeError {
  override readonly name = 'DeviceQueryError';
  declare readonly code: 'SOUP_DEVICE_QUERY_FAILED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_DEVICE_QUERY_FAILED', cause: options?.cause });
  }
}

/** No memory cgroup can be made here (not Linux, no memory controller, no write access); `reason` says which. */
export class MemoryCgroupUnavailableError extends CudaProbeError {
  override readonly name = 'MemoryCgroupUnavailableError';
  declare readonly code: 'SOUP_CGROUP_UNAVAILABLE';
  readonly reason: string;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`no memory cgroup can be made: ${reason}`, { code: 'SOUP_CGROUP_UNAVAILABLE', cause: options?.cause });
    this.reason = reason;
  }
}

/**
 * An optional peer dependency (onnxruntime-node, @soup/onnx-train) is not installed; the message names the install
 * command.
 */
export class PeerDependencyMissingError extends CudaProbeError {
  override readonly name = 'PeerDependencyMissingError';
  declare readonly code: 'SOUP_PEER_DEPENDENCY_MISSING';
  readonly packages: string[];
  constructor(message: string, options: { packages: string[]; cause?: unknown }) {
    super(message, { code: 'SOUP_PEER_DEPENDENCY_MISSING', cause: options.cause });
    this.packages = options.packages;
  }
}
