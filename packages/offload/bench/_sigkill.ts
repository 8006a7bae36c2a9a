// Step 4 of the bench: a disk child SIGKILLed inside the cap while it holds scratch files, and what it leaves.
import { existsSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sweepScratchFiles } from '../src/index';
import type { createCappedTrials } from './_capped-trials';

/** How many open files of process `pid` lie in `dir` (named files and anonymous ones alike). */
const heldIn = (pid: number, dir: string): number => {
  let n = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(`${dir}/`)) n += 1;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // the child is gone
  }
  return n;
};

/**
 * Runs a disk child at `killBatch` under the cap and kills it once it holds four scratch files; counts what is left
 * after the kill, after the next store's sweep, and anywhere under the scratch root.
 */
export async function killInsideCap(p: {
  runCapped: ReturnType<typeof createCappedTrials>['runCapped'];
  killBatch: number;
  capBytes: number;
  steps: number;
  scratchRoot: string;
}) {
  const { killBatch, capBytes, steps, scratchRoot } = p;
  let filesAtKill = 0;
  const { trial: killed, dir: killDir } = await p.runCapped('segmented-disk', killBatch, capBytes, steps, (dir) => {
    const ac = new AbortController();
    const acts = join(realpathSync(dir), '.soup-acts');
    let poll: NodeJS.Timeout | undefined;
    ac.signal.addEventListener('abort', () => clearInterval(poll));
    return {
      signal: ac.signal,
      onSpawn: ({ pid }) => {
        if (pid === undefined) return;
        poll = setInterval(() => {
          const n = heldIn(pid, acts);
          if (n >= 4) {
            filesAtKill = n;
            ac.abort();
          }
        }, 2);
        setTimeout(() => clearInterval(poll), 280_000).unref();
      },
    };
  });
  const actsDir = join(killDir, '.soup-acts');
  const leftAfterKill = existsSync(actsDir) ? readdirSync(actsDir).length : 0;
  const swept = existsSync(actsDir) ? sweepScratchFiles({ saveDir: '.soup-acts', cwd: killDir }) : [];
  const leftAfterSweep = existsSync(actsDir) ? readdirSync(actsDir).length : 0;
  rmSync(killDir, { recursive: true, force: true });
  const leftInScratchRoot = (readdirSync(scratchRoot, { recursive: true }) as string[]).filter((p) =>
    /(^|\/)soup-act-[^/]*\.bin$/.test(p),
  ).length;

  return { killed, filesAtKill, leftAfterKill, swept, leftAfterSweep, leftInScratchRoot };
}
