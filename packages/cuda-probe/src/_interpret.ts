// Turns a finished child that did not report success into a "does not fit" answer (OOM in
// the output, or SIGKILL from the OOM killer) or an error that propagates.
import { type ChildRun, tail } from './_child-runner';
import { classifyOutOfMemory, type OutOfMemoryClassification } from './classify-out-of-memory';
import { ProbeChildError, ProbeTimeoutError } from './errors';

export type FailureVerdict =
  | { reason: 'oom'; oom: OutOfMemoryClassification; detail: string }
  | { reason: 'killed'; detail: string };

function how(run: ChildRun): string {
  return run.signal ? `signal ${run.signal}` : `exit code ${run.exitCode}`;
}

/**
 * @param message the child's own error message, when it reported one
 * @throws the abort reason, {@link ProbeTimeoutError}, or {@link ProbeChildError} for a non-OOM failure
 */
export function judgeFailure(run: ChildRun, ctx: { batchSize: number; timeoutMs: number; what: string; message?: string; signal?: AbortSignal }): FailureVerdict {
  if (run.aborted) throw ctx.signal?.reason ?? new Error('probe aborted');
  if (run.timedOut) throw new ProbeTimeoutError(ctx.batchSize, ctx.timeoutMs, tail(run.stderr));
  const text = [ctx.message ?? '', run.stderr, run.stdout].join('\n');
  const cls = classifyOutOfMemory(text);
  if (cls.oom) {
    return { reason: 'oom', oom: cls, detail: `out of memory at batch_size=${ctx.batchSize} (${cls.kind}, ${how(run)}): ${cls.line}` };
  }
  if (run.signal === 'SIGKILL' && cls.kind === null) {
    return {
      reason: 'killed',
      detail: `${ctx.what} for batch_size=${ctx.batchSize} was killed by SIGKILL (not by soup): the kernel OOM killer or a cgroup memory limit`,
    };
  }
  const excluded = cls.kind !== null ? ` — ${cls.kind} is a crash, not an out-of-memory answer` : '';
  throw new ProbeChildError(
    `${ctx.what} for batch_size=${ctx.batchSize} failed (${how(run)})${excluded}${ctx.message ? `: ${ctx.message.split('\n')[0]}` : ''}`,
    { batchSize: ctx.batchSize, exitCode: run.exitCode, signal: run.signal, stderrTail: tail(run.stderr) },
  );
}
