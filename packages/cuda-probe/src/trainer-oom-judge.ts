// The out-of-memory judge of a supervised trainer across its launches: what it raised (trainerOomLine), and,
// for a trainer that was killed (SIGKILL, or 137 through a wrapper or launcher) without saying why, the kernel's
// evidence gathered from its launch on, as a probe gathers it: the oom_kill count of a memory cgroup its process
// tree ran in (other than soup's own), or a rise of /proc/vmstat oom_kill with the kernel log naming a process of
// the trainer's tree (a launcher's rank, a wrapper's child: not only the leader). A kill with no such evidence (a
// `kill -9`, a supervisor) stays "not out of memory", so the caller treats it as any failure instead of stepping
// the micro-batch down.
import { type KillEvidenceBaseline, killEvidenceBaseline, oomKillEvidence } from './_kill-evidence';
import { readMemoryCgroupCounters } from './_memory-cgroup';
import { followTree, type TreeFollower } from './_tree-cgroups';
import { type TrainerExitTails, trainerOomLine } from './out-of-memory-line';

/** A judge that learns of each launch, then judges how that launch ended. */
export interface TrainerOomJudge {
  /** The trainer was launched as `pid`: the counters its kill is compared with are read now, its tree followed. */
  launched(pid: number): void;
  /** The out-of-memory line of the launch that ended (raised, or the kernel's kill evidence), else null. */
  judge(exit: TrainerExitTails): string | null;
}

/** Its own cgroup's oom_kill rose since the tree was first seen in it: the phrase, else null. */
function cgroupEvidence(tree: TreeFollower): string | null {
  for (const cg of tree.cgroups.values()) {
    const after = readMemoryCgroupCounters(cg.dir, cg.version).oomKills;
    if (after !== null && after > cg.oomKillsAtFirstSight) {
      const n = after - cg.oomKillsAtFirstSight;
      return `its memory cgroup ${cg.dir} counted ${n} oom_kill event${n === 1 ? '' : 's'}`;
    }
  }
  return null;
}

export function createTrainerOomJudge(): TrainerOomJudge {
  let launch: { pid: number; base: KillEvidenceBaseline; tree: TreeFollower } | null = null;
  return {
    launched(pid) {
      launch?.tree.stop();
      launch = { pid, base: killEvidenceBaseline(), tree: followTree(pid) };
    },
    judge(exit) {
      launch?.tree.stop();
      const raised = trainerOomLine(exit);
      if (raised !== null) return raised;
      const killed = exit.signal === 'SIGKILL' || exit.code === 137;
      if (!killed || launch === null) return null;
      // The kernel log naming the process it killed is the most specific evidence; a cgroup's count stands in for it
      // where the log is unreadable or names none of the tree's pids (one seen only between two readings).
      const evidence =
        oomKillEvidence(launch.base, { peakBytes: null, budgetBytes: null, pids: launch.tree.pids }) ??
        cgroupEvidence(launch.tree);
      return evidence === null ? null : `killed by SIGKILL: ${evidence}`;
    },
  };
}
