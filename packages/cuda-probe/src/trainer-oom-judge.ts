// The out-of-memory judge of a supervised trainer across its launches: what it raised (trainerOomLine), and,
// for a trainer that was killed (SIGKILL, or 137 through a wrapper) without saying why, the kernel's evidence
// gathered from its launch on: its memory cgroup's oom_kill count, or an OOM kill the kernel log names for
// the trainer's own pid. A kill with no such evidence (a `kill -9`, a supervisor) stays "not out of memory",
// so the caller treats it as any failure instead of stepping the micro-batch down.
import { type KillEvidenceBaseline, killEvidenceBaseline, oomKillEvidence } from './_kill-evidence';
import { type TrainerExitTails, trainerOomLine } from './out-of-memory-line';

/** A judge that learns of each launch, then judges how that launch ended. */
export interface TrainerOomJudge {
  /** The trainer was launched as `pid`: the counters its kill is later compared with are read now. */
  launched(pid: number): void;
  /** The out-of-memory line of the launch that ended (raised, or the kernel's kill evidence), else null. */
  judge(exit: TrainerExitTails): string | null;
}

export function createTrainerOomJudge(): TrainerOomJudge {
  let launch: { pid: number; base: KillEvidenceBaseline } | null = null;
  return {
    launched(pid) {
      launch = { pid, base: killEvidenceBaseline() };
    },
    judge(exit) {
      const raised = trainerOomLine(exit);
      if (raised !== null) return raised;
      const killed = exit.signal === 'SIGKILL' || exit.code === 137;
      if (!killed || launch === null) return null;
      const evidence = oomKillEvidence(launch.base, {
        peakBytes: null,
        budgetBytes: null,
        pids: new Set([launch.pid]),
      });
      return evidence === null ? null : `killed by SIGKILL: ${evidence}`;
    },
  };
}
