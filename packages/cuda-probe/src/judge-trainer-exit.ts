// The verdict on a trainer that exited with a failure, outside a probe (e.g. mid-run under a
// supervisor): the same judge as a failed probe trial (what it raised, launcher prefixes removed,
// then its exit status), so "out of memory" means the same thing in both places.
import type { ChildRun } from './_child-runner';
import { judgeFailure } from './_interpret';
import { ProbeChildError } from './errors';

/** What a failed trainer left: its output (the tail is enough) and how it ended. */
export interface TrainerExitFacts {
  /** Its stdout (the last lines are judged when stderr has no error lines). */
  stdout: string;
  /** Its stderr. */
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The verdict of {@link judgeTrainerExit}. */
export interface TrainerExitVerdict {
  /** True only when what the trainer raised is an out-of-memory error. */
  oom: boolean;
  /** The line that decided (the out-of-memory line, or the failure's own line); null when nothing was said. */
  line: string | null;
  /** The catalogue kind (`pytorch-cuda`, `pytorch-cpu`, `node-buffer`, …) when `oom`, else null. */
  kind: string | null;
}

/**
 * Judges a trainer that failed: out of memory only when what it raised says so (PyTorch CUDA / CPU,
 * ONNX Runtime, XLA, Node, … under torchrun / accelerate prefixes). A SIGKILL or exit 137 with no
 * such line is not taken as out of memory here (no kill evidence is gathered outside a probe):
 * the verdict is "not out of memory", and the caller acts as for any failure.
 */
export function judgeTrainerExit(f: TrainerExitFacts): TrainerExitVerdict {
  const run: ChildRun = {
    pid: undefined,
    exitCode: f.code,
    signal: f.signal,
    stdout: f.stdout,
    stderr: f.stderr,
    result: undefined,
    timedOut: false,
    aborted: false,
    wallMs: 0,
    sampledPeakRssBytes: null,
    killedAboveRss: false,
  };
  try {
    const v = judgeFailure(run, { batchSize: 0, timeoutMs: 0, what: 'the trainer', killEvidence: null });
    if (v.reason === 'oom') return { oom: true, line: v.oom.line, kind: v.oom.kind };
    return { oom: false, line: v.detail, kind: null };
  } catch (err) {
    if (err instanceof ProbeChildError)
      return { oom: false, line: err.message.replace(/^.*?failed \([^)]*\)(: )?/, '') || null, kind: null };
    throw err;
  }
}
