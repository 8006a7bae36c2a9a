// SLURM's requeue: once a session end is saved and pushed, the job asks to run again (`scontrol requeue`), so a
// job under `sbatch --requeue --signal=B:USR1@120` continues the run in its next allocation.
import { spawn } from 'node:child_process';

/** How `scontrol requeue <job>` ended: its exit code (null: killed, or it could not start) and its output. */
export interface RequeueResult {
  argv: string[];
  code: number | null;
  output: string;
}

/** Runs `scontrol requeue <jobId>` (found on `env.PATH`), waiting at most `timeoutMs`. Never throws. */
export function requeueSlurmJob(p: {
  jobId: string;
  env: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<RequeueResult> {
  const argv = ['scontrol', 'requeue', p.jobId];
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(argv[0]!, argv.slice(1), { env: p.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), p.timeoutMs ?? 60_000);
    const keep = (d: Buffer): void => {
      output = (output + d.toString('utf8')).slice(-2000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ argv, code: null, output: `cannot run scontrol: ${err.code ?? err.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ argv, code, output: output.trim() });
    });
  });
}
