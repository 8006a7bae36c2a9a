// The PyTorch twins' interpreter, and why they cannot run here: each such test skips with this reason printed.
import { spawnSync } from 'node:child_process';

/** The Python the PyTorch twins run under: $PYTHON, else Debian's, where apt's python3-torch installs. */
export const PYTHON = process.env.PYTHON ?? '/usr/bin/python3';

/** How to get the PyTorch twins on this machine (the root README says the same). */
export const TORCH_INSTALL = 'apt-get install -y python3-torch python3-onnx libopenblas0-pthread';

/** Why `python -c "import torch"` fails, with how to install it; null when torch imports. */
export function torchMissing(python: string = PYTHON): string | null {
  const r = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8', timeout: 60_000 });
  if (r.status === 0) return null;
  const why = (r.error?.message ?? r.stderr ?? '').trim().split('\n').pop() || `exit code ${r.status}`;
  return `${python} -c "import torch" failed (${why}); install: ${TORCH_INSTALL}`;
}
