// Turns a finished child that did not report success into a "does not fit" answer (what it
// raised is an out-of-memory error, or it was SIGKILLed / exited 137: the OOM killer) or an
// error that propagates. Only what the child raised is judged, never every line it logged.
import { constants as osConstants } from 'node:os';
import type { ChildRun } from './_child-runner';
import { lastLines, raisedLines } from './_raised';
import { classifyOutOfMemory, type OutOfMemoryClassification } from './classify-out-of-memory';
import { ProbeChildError, ProbeTimeoutError } from './errors';

export type FailureVerdict =
  | { reason: 'oom'; oom: OutOfMemoryClassification; detail: string; judgedBy: JudgedBy }
  | { reason: 'killed'; detail: string; judgedBy: 'exit-status' }
  /** Killed with no evidence that memory was the cause (see `_kill-evidence.ts`): not an out-of-memory answer. */
  | { reason: 'not-memory'; signalNumber: number; detail: string; judgedBy: 'exit-status' };

/**
 * What a failed trial was judged on: the child's own error report, its traceback's exception lines, its last error
 * lines, or its exit status.
 */
export type JudgedBy = 'message' | 'traceback' | 'error-lines' | 'exit-status';

function how(run: ChildRun): string {
  return run.signal ? `signal ${run.signal}` : `exit code ${run.exitCode}`;
}

/** Which stream {@link stderrTailOf} takes its lines from. */
export function tailSourceOf(run: Pick<ChildRun, 'stderr' | 'stdout'>): 'stderr' | 'stdout' {
  return run.stderr.trim() !== '' || run.stdout.trim() === '' ? 'stderr' : 'stdout';
}

/** The last 20 lines of the child's stderr (stdout when stderr is empty), at most 8000 characters. */
export function stderrTailOf(run: Pick<ChildRun, 'stderr' | 'stdout'>): string {
  const text = run.stderr.trim() !== '' ? run.stderr : run.stdout;
  const t = lastLines(text, 20);
  return t.length > 8000 ? t.slice(-8000) : t;
}

/**
 * @param message the child's own error message, when it reported one (judged first)
 * @throws the abort reason, {@link ProbeTimeoutError}, or {@link ProbeChildError} for a non-OOM failure
 */
export function judgeFailure(
  run: ChildRun,
  ctx: {
    batchSize: number;
    timeoutMs: number;
    what: string;
    message?: string;
    signal?: AbortSignal;
    /** How the caller names the timeout in the error's advice. @default 'timeoutMs' */
    timeoutName?: string;
    /**
     * For a killed child: why it counts as out of memory (a phrase), or null when it was checked
     * and there is no evidence (then the verdict is `not-memory`). Absent: not checked, a kill is
     * taken as the OOM killer's.
     */
    killEvidence?: string | null;
  },
): FailureVerdict {
  if (run.aborted) throw ctx.signal?.reason ?? new Error('probe aborted');
  const stderrTail = stderrTailOf(run);
  const tailSource = tailSourceOf(run);
  if (run.timedOut)
    throw new ProbeTimeoutError(
      ctx.batchSize,
      ctx.timeoutMs,
      stderrTail,
      `${ctx.what} for batch_size=${ctx.batchSize}`,
      ctx.timeoutName,
      tailSource,
    );
  let raised = raisedLines(run.stderr);
  if (raised.source === 'none') raised = raisedLines(run.stdout);
  const judgedBy: JudgedBy =
    ctx.message !== undefined ? 'message' : raised.source === 'none' ? 'exit-status' : raised.source;
  const text = [ctx.message ?? '', ...raised.blocks.map((b) => b.join('\n'))].join('\n\n');
  const cls = classifyOutOfMemory(text);
  if (cls.oom) {
    return {
      reason: 'oom',
      oom: cls,
      judgedBy,
      detail: `out of memory at batch_size=${ctx.batchSize} (${cls.kind}, ${how(run)}): ${cls.line}`,
    };
  }
  // SIGKILL, or 137 = 128 + SIGKILL from a wrapper (bash prints "Killed" and exits 137): the
  // kernel OOM killer or a cgroup limit, unless what was raised is a crash.
  const killed = run.signal === 'SIGKILL' || run.exitCode === 137;
  if (killed && cls.kind === null && ctx.killEvidence === null) {
    const signalNumber = run.signal ? (osConstants.signals[run.signal] ?? 9) : (run.exitCode ?? 137) - 128;
    return {
      reason: 'not-memory',
      signalNumber,
      judgedBy: 'exit-status',
      detail:
        `${ctx.what} for batch_size=${ctx.batchSize} was killed by signal ${signalNumber}` +
        ` (not memory): no memory-cgroup oom_kill, no rise of /proc/vmstat oom_kill and a peak under 90 % of the ` +
        `budget and of the free memory`,
    };
  }
  if (killed && cls.kind === null) {
    const wrapper =
      run.signal === 'SIGKILL'
        ? 'killed by SIGKILL'
        : `exited 137 (SIGKILL seen through a wrapper` +
          `${raised.lines.some((l) => /\bKilled\b/.test(l)) ? ', which printed "Killed"' : ''})`;
    return {
      reason: 'killed',
      judgedBy: 'exit-status',
      detail:
        `${ctx.what} for batch_size=${ctx.batchSize} was ${wrapper}, not by soup: ` +
        (ctx.killEvidence ? `out of memory (${ctx.killEvidence})` : 'the kernel OOM killer or a cgroup memory limit'),
    };
  }
  const excluded = cls.kind !== null ? ` — ${cls.kind} is a crash, not an out-of-memory answer` : '';
  const said = ctx.message ? ctx.message.split('\n')[0] : raised.lines.at(-1);
  throw new ProbeChildError(
    `${ctx.what} for batch_size=${ctx.batchSize} failed (${how(run)})${excluded}${said ? `: ${said}` : ''}`,
    {
      batchSize: ctx.batchSize,
      exitCode: run.exitCode,
      signal: run.signal,
      stderrTail,
      tailSource,
    },
  );
}
