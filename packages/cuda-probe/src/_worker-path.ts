import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ProbeOptionsError } from './errors';

/**
 * dist/worker.js next to the running module (the installed package), or the built one when
 * this module runs from src/ (the package's own tests).
 */
export function resolveWorkerPath(explicit?: string): string {
  if (explicit !== undefined) {
    if (!existsSync(explicit))
      throw new ProbeOptionsError(`workerPath: ${explicit} does not exist`, { field: 'workerPath' });
    return explicit;
  }
  const candidates = [new URL('./worker.js', import.meta.url), new URL('../dist/worker.js', import.meta.url)];
  for (const c of candidates) {
    const p = fileURLToPath(c);
    if (existsSync(p)) return p;
  }
  throw new ProbeOptionsError(
    `the probe worker (dist/worker.js) is missing next to ${fileURLToPath(import.meta.url)}; build the package ` +
      `(npm run build -w @soup/cuda-probe)`,
    { field: 'workerPath' },
  );
}
