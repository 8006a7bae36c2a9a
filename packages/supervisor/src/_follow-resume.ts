// A follower's resume: the checkpoint node 0 chose, pulled read-only from the store into this node's output folder,
// or used where it lies when this node shares node 0's output folder.
import { pullCheckpoint, type CheckpointStore } from '@soup/hub-ckpt';
import { join, resolve } from 'node:path';
import { fileCheckpointIn, type SupervisedResume } from './resume-supervised';
import type { SessionFacts, SessionOptions } from './supervise-options';
import type { ResumeNote } from './_nodes-files';
import type { Tell } from './_tell';

/** What this follower resumes from: node 0's `note`, pulled (every sha256 checked) unless the folder is shared. */
export async function followResume(p: {
  o: Pick<SessionOptions, 'outputDir' | 'signal'>;
  note: ResumeNote;
  store: CheckpointStore;
  facts: SessionFacts;
  tell: Tell;
}): Promise<{ resumed: SupervisedResume; runId: string }> {
  return { resumed: await resumeAsNode0(p), runId: p.note.run };
}

async function resumeAsNode0(p: Parameters<typeof followResume>[0]): Promise<SupervisedResume> {
  const { note, facts } = p;
  const { emit, show } = p.tell;
  if (note.complete && note.step !== null && note.path_in_repo !== null)
    return { outcome: 'complete', step: note.step, pathInRepo: note.path_in_repo };
  if (note.step === null || note.path_in_repo === null || note.resume_from === null) return { outcome: 'fresh' };
  facts.startStep = note.step;
  const common = { outcome: 'resume', step: note.step, pathInRepo: note.path_in_repo, via: null } as const;
  if (resolve(note.output_dir) === resolve(p.o.outputDir)) {
    emit('resumed', `resuming from node 0's ${show(note.resume_from)} (step ${note.step}, shared folder)`, {
      step: note.step,
    });
    const dir = note.dir ?? note.resume_from;
    return { ...common, dir, resumeFrom: note.resume_from, previousStep: null, fileCount: 0, skipped: [] };
  }
  const t = Date.now();
  const dir = join(p.o.outputDir, `checkpoint-${note.step}`);
  const pulled = await pullCheckpoint({
    store: p.store,
    pathInRepo: note.path_in_repo,
    dir,
    overwrite: true,
    signal: p.o.signal,
  });
  emit(
    'resumed',
    `pulled node 0's ${note.path_in_repo} (step ${note.step}, ${pulled.fileCount} files, every sha256 checked, ` +
      `read-only) into ${show(dir)} in ${Date.now() - t} ms`,
    { step: note.step },
  );
  return {
    ...common,
    dir,
    resumeFrom: fileCheckpointIn(dir) ?? dir,
    previousStep: null,
    fileCount: pulled.fileCount,
    skipped: [],
  };
}
