// Where a supervised run resumes: the store's newest checkpoint that verifies, pulled into
// {output_dir}/checkpoint-<step>, falling back to an older one when the newest is corrupt.
import { pullCheckpoint, resolveResume, type CheckpointStore } from '@soup/hub-ckpt';
import { join, relative } from 'node:path';
import type { CommandContext } from './_context';

/** What this session starts from. */
export type SupervisedResume =
  | { outcome: 'fresh' }
  | { outcome: 'complete'; step: number; pathInRepo: string }
  | { outcome: 'resume'; step: number; pathInRepo: string; dir: string; via: string | null; previousStep: number | null };

/** Resolves the pointer (with fallback) and pulls the checkpoint, saying which one and why. */
export async function resumeSupervised(p: { store: CheckpointStore; run: string; outputDir: string; ctx: CommandContext }): Promise<SupervisedResume> {
  const { store, run, ctx } = p;
  const r = await resolveResume({ store, run, fallback: true, repair: true, logger: { info: (l) => ctx.say(`soup: ${l}`) } });
  if (r.outcome === 'fresh') return { outcome: 'fresh' };
  if (r.outcome === 'complete') return { outcome: 'complete', step: r.step, pathInRepo: r.pathInRepo };
  if (r.via === 'fallback') {
    ctx.warn(
      `${r.previousStep !== null ? `the newest checkpoint (step ${r.previousStep})` : 'latest.json'} does not verify: falling back to ${r.pathInRepo} (step ${r.step}), the newest that does`,
    );
  } else if (r.via === 'newer-verified') {
    ctx.say(`soup: ${r.pathInRepo} (step ${r.step}) was verified after latest.json last moved (step ${r.previousStep}): resuming from it`);
  }
  const dir = join(p.outputDir, `checkpoint-${r.step}`);
  const t0 = Date.now();
  const pulled = await pullCheckpoint({ store, pathInRepo: r.pathInRepo, dir, expectedManifestSha256: r.manifestSha256, overwrite: true });
  ctx.say(`soup: pulled ${r.pathInRepo} (step ${r.step}, ${pulled.fileCount} files, every sha256 checked) into ${relative(ctx.cwd, dir) || dir} in ${Date.now() - t0} ms`);
  return { outcome: 'resume', step: r.step, pathInRepo: r.pathInRepo, dir, via: r.via, previousStep: r.previousStep };
}
