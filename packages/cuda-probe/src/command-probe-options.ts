// The options of createCommandProbe: how a trainer command is run, judged and measured.
import type { StepsEvidence } from './steps-seen';

/** Options of {@link createCommandProbe}. */
export interface CreateCommandProbeOptions {
  /**
   * The trainer's command for ONE step. A string is split into argv like a POSIX shell splits
   * words (quotes and backslashes), but nothing else: no variables, globs, pipes or redirections,
   * and it never runs through a shell. An array is used as argv as it is. Every `{batch_size}` in
   * an argument is replaced by the candidate.
   */
  command: string | readonly string[];
  /**
   * Environment of the command; `SOUP_PROBE_BATCH_SIZE` is added with the candidate.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the command. @default process.cwd() */
  cwd?: string;
  /**
   * Kill the command (SIGKILL, whole process group) after this long; the trial throws
   * `ProbeTimeoutError`.
   * @default 600000
   */
  timeoutMs?: number;
  /**
   * Peak memory the command's whole process tree may reach, in bytes (a `bash -c` wrapper's
   * trainer, a launcher's ranks, a data loader's workers all count). Measured by a memory cgroup
   * around each trial where one can be made (see `memoryCgroup`): its hard limit is the budget,
   * so a tree over it is stopped by the kernel, and its peak usage (page cache included) is the
   * trial's peak. Else the sum of RSS over the tree, sampled from /proc every `peakRssPollMs`
   * (growth in the last interval before it exits can be missed): a sample past the budget stops
   * the tree at once (SIGKILL). Either way a command that exits 0 above it does not fit, and a
   * trial far over it never takes much more host memory than the budget. Each verdict names how
   * it measured: `(cgroup)` or `(tree RSS, N processes)`.
   * @default no gate: exit 0 fits
   */
  budgetBytes?: number;
  /**
   * With `budgetBytes` on the CPU: `auto` runs each trial in a memory cgroup of its own when this
   * process can create one (root, or a delegated subtree; v1 or v2), else sums the tree's RSS;
   * `off` always sums the tree's RSS.
   * @default 'auto'
   */
  memoryCgroup?: 'auto' | 'off';
  /**
   * RLIMIT_AS of the command, applied with prlimit (util-linux) — never through a shell; an
   * allocation beyond it fails inside the command, which then reports its own out-of-memory
   * error. Leave it unset for CUDA trainers: the driver reserves far more address space.
   * @default no limit
   */
  addressSpaceBytes?: number;
  /**
   * How often VmHWM is sampled when `budgetBytes` is set.
   * @default 20
   */
  peakRssPollMs?: number;
  /**
   * How the caller names the timeout in a timeout error's advice (soup passes `--timeout`).
   * @default 'timeoutMs'
   */
  timeoutName?: string;
  /** Aborts the running trial (its process group is killed) and every later one. */
  signal?: AbortSignal;
  /**
   * Judge the command by its GPU memory, sampled with nvidia-smi every `pollMs` while it runs:
   * the memory of its processes (its whole process group) where the driver lists them, else the
   * device's used-memory delta from before the command started (WSL2, WDDM `[N/A]`, another PID
   * namespace: the probe owns the GPU while it runs). The budget is the GPU's free memory before
   * the command, capped by `budgetBytes`; peak RSS is then not gated. `deviceId` is CUDA's index
   * under the command's `CUDA_VISIBLE_DEVICES`. A peak reached and released between two samples
   * is missed (PyTorch and ORT keep what they reserved until exit, so the high-water mark stays).
   * @default no GPU measurement
   */
  gpu?: { deviceId?: number; nvidiaSmiPath?: string; pollMs?: number };
  /**
   * Where each run shows the steps it ran by the trainer's own count (a pattern over its output
   * lines, a trainer_state.json it writes: see `startStepsCount`); the count is the trial's `stepsSeen`.
   * @default no count
   */
  steps?: StepsEvidence;
}
