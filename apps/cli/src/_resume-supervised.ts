// Where a supervised run resumes: @soup/hub-ckpt's pullResume pulls the store's newest checkpoint that
// verifies and pulls cleanly into {output_dir}/checkpoint-<step>, walking back past corrupt ones.
import { pullResume, type CheckpointStore } from '@soup/hub-ckpt';
import { relative } from 'node:path';
import type { CommandContext } from './_context';

/** What this session starts from. */
export type SupervisedResume =
  | { outcome: 'fresh' }
  | { outcome: 'complete'; step: number; pathInRepo: string }
  | { outcome: 'resume'; step: number; pathInRepo: string; dir: string; via: string | null; previousStep: number | null };

/** Resolves the pointer (with fallback) and pulls the checkpoint, saying which one and why. */
export async function resumeSupervised(p: { store: CheckpointStore; run: string; outputDir: string; ctx: CommandContext }): Promise<SupervisedResume> {
  const { store, run, ctx } = p;
  const t0 = Date.now();
  const r = await pullResume({ store, run, dir: p.outputDir, fallback: true, repair: true, overwrite: true, signal: ctx.signal, logger: { info: (l) => ctx.say(`soup: ${l}`) } });
  if (r.outcome === 'fresh') return { outcome: 'fresh' };
  if (r.outcome === 'complete') return { outcome: 'complete', step: r.step, pathInRepo: r.pathInRepo };
  for (const s of r.skipped) ctx.warn(`${s.pathInRepo} (step ${s.step}) does not verify or pull cleanly: ${s.problems.slice(0, 2).join('; ')}`);
  if (r.via === 'fallback') {
    ctx.warn(`falling back to ${r.pathInRepo} (step ${r.step}), the newest checkpoint that verifies and pulls cleanly${r.previousStep !== null ? ` (latest.json names step ${r.previousStep})` : ''}`);
  } else if (r.via === 'newer-verified') {
    ctx.say(`soup: ${r.pathInRepo} (step ${r.step}) was verified after latest.json last moved (step ${r.previousStep}): resuming from it`);
  }
  ctx.say(`soup: pulled ${r.pathInRepo} (step ${r.step}, ${r.pulled.fileCount} files, every sha256 checked) into ${relative(ctx.cwd, r.localDir) || r.localDir} in ${Date.now() - t0} ms`);
  return { outcome: 'resume', step: r.step, pathInRepo: r.pathInRepo, dir: r.localDir, via: r.via, previousStep: r.previousStep };
}
