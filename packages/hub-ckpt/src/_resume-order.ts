// The resume fallback order, written once: pullResume and resolveResume both walk this list.
import { checkpointPath } from './_layout';
import type { Pointer } from './types';

export interface ResumeCandidate {
  step: number;
  /** Why this candidate is not simply the pointed one; null for the pointed one. */
  via: 'newer-verified' | 'fallback' | 'no-pointer' | null;
  /** The pointer's manifest sha256, for the pointed candidate. */
  expectedManifestSha256?: string;
}

/**
 * The checkpoints a resume tries, in order: with no latest.json, every one newest first (`no-pointer`);
 * with an invalid one, every one newest first when `fallback` (`fallback`); with a valid one, those
 * newer than it (`newer-verified`, a crash between verify and pointer), the pointed one, then — when
 * `fallback` — the older ones, newest first.
 */
export function resumeCandidates(p: {
  hasPointerFile: boolean;
  pointer: Pointer | null;
  steps: number[];
  fallback: boolean;
}): ResumeCandidate[] {
  const steps = [...p.steps].sort((a, b) => b - a);
  if (!p.hasPointerFile) return steps.map((step) => ({ step, via: 'no-pointer' as const }));
  const pointer = p.pointer;
  if (pointer === null) return p.fallback ? steps.map((step) => ({ step, via: 'fallback' as const })) : [];
  const out: ResumeCandidate[] = steps
    .filter((s) => s > pointer.step)
    .map((step) => ({ step, via: 'newer-verified' as const }));
  if (pointer.path_in_repo === checkpointPath(pointer.step))
    out.push({ step: pointer.step, via: null, expectedManifestSha256: pointer.manifest_sha256 });
  if (p.fallback)
    out.push(...steps.filter((s) => s < pointer.step).map((step) => ({ step, via: 'fallback' as const })));
  return out;
}
