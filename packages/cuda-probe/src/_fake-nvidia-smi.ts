// Test helper: a real executable standing in for nvidia-smi. It answers the two queries this
// package makes from a JSON state file the test can rewrite between calls.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FakeSmiState {
  /** CSV rows of `--query-gpu=index,uuid,name,memory.total,memory.free` (MiB, no units). */
  gpus?: string[];
  /** CSV rows of `--query-compute-apps=pid,gpu_uuid,used_memory`. */
  apps?: string[];
  /** When set, the tool prints this on stderr and exits 9. */
  fail?: string;
}

export function writeFakeNvidiaSmi(
  dir: string,
  state: FakeSmiState,
): { path: string; update: (s: FakeSmiState) => void } {
  const statePath = join(dir, 'fake-smi-state.json');
  const path = join(dir, 'nvidia-smi');
  const update = (s: FakeSmiState): void => writeFileSync(statePath, JSON.stringify(s));
  update(state);
  writeFileSync(
    path,
    `#!${process.execPath}
const s = JSON.parse(require('fs').readFileSync(${JSON.stringify(statePath)}, 'utf8'));
const args = process.argv.slice(2).join(' ');
if (s.fail) { process.stderr.write(s.fail + '\\n'); process.exit(9); }
if (args.includes('--query-gpu=')) process.stdout.write((s.gpus || []).join('\\n') + '\\n');
else if (args.includes('--query-compute-apps=')) process.stdout.write((s.apps || []).join('\\n') + '\\n');
else { process.stderr.write('unexpected arguments: ' + args + '\\n'); process.exit(2); }
`,
  );
  chmodSync(path, 0o755);
  return { path, update };
}
