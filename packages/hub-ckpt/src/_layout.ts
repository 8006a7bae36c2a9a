/** Repo layout (see ARCHITECTURE.md): latest.json, ckpt/checkpoint-<step>/, final/. */
export const POINTER_PATH = 'latest.json';
export const CKPT_PREFIX = 'ckpt';
export const FINAL_PATH = 'final';
export const MANIFEST_NAME = 'manifest.json';

export function checkpointPath(step: number): string {
  return `${CKPT_PREFIX}/checkpoint-${step}`;
}

/** The step of `ckpt/checkpoint-<step>` (or of a file under it), else null. */
export function stepOfPath(path: string): number | null {
  const m = /^ckpt\/checkpoint-(0|[1-9][0-9]*)(\/|$)/.exec(path);
  return m ? Number(m[1]) : null;
}

/** Step of a local folder name `checkpoint-<step>`, else null. */
export function stepOfLocalName(name: string): number | null {
  const m = /^checkpoint-(0|[1-9][0-9]*)$/.exec(name);
  return m ? Number(m[1]) : null;
}
