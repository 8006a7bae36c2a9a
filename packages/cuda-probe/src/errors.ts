/** Base class of every error this package throws: a stable `code`, the `cause` kept. */
export class CudaProbeError extends Error {
  readonly code: string;
  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CudaProbeError';
    this.code = code;
  }
}

/** Bad options given to a probe factory or a probe call; the message names the field and the fix. */
export class ProbeOptionsError extends CudaProbeError {
  readonly field: string;
  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super(message, 'SOUP_PROBE_INVALID_OPTIONS', options);
    this.name = 'ProbeOptionsError';
    this.field = field;
  }
}

/** The probe child ran past `timeoutMs` and was killed with SIGKILL. */
export class ProbeTimeoutError extends CudaProbeError {
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
      'SOUP_PROBE_TIMEOUT',
    );
    this.name = 'ProbeTimeoutError';
    this.timeoutMs = timeoutMs;
    this.batchSize = batchSize;
    this.stderrTail = stderrTail;
    this.tailSource = tailSource;
  }
}

/** The probe child failed for a reason that is not out-of-memory (a crash, a bad model, a bug). */
export class ProbeChildError extends CudaProbeError {
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
    },
    options?: { cause?: unknown },
  ) {
    super(
      message + (details.stderrTail ? `\n--- ${details.tailSource ?? 'stderr'} tail ---\n${details.stderrTail}` : ''),
      'SOUP_PROBE_CHILD_FAILED',
      options,
    );
    this.name = 'ProbeChildError';
    this.batchSize = details.batchSize;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stderrTail = details.stderrTail;
    this.tailSource = details.tailSource ?? 'stderr';
  }
}

/** A device query (nvidia-smi, /proc, cgroup files) could not answer where an answer was required. */
export class DeviceQueryError extends CudaProbeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'SOUP_DEVICE_QUERY_FAILED', options);
    this.name = 'DeviceQueryError';
  }
}

/** No memory cgroup can be made here (not Linux, no memory controller, no write access); `reason` says which. */
export class MemoryCgroupUnavailableError extends CudaProbeError {
  readonly reason: string;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`no memory cgroup can be made: ${reason}`, 'SOUP_CGROUP_UNAVAILABLE', options);
    this.name = 'MemoryCgroupUnavailableError';
    this.reason = reason;
  }
}

/** An optional peer dependency (onnxruntime-node, @soup/onnx-train) is not installed; the message names the install command. */
export class PeerDependencyMissingError extends CudaProbeError {
  readonly packages: string[];
  constructor(packages: string[], message: string, options?: { cause?: unknown }) {
    super(message, 'SOUP_PEER_DEPENDENCY_MISSING', options);
    this.name = 'PeerDependencyMissingError';
    this.packages = packages;
  }
}
