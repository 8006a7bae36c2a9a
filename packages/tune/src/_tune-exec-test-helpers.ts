// Tests of tuneExec without child processes: the fit and timing runs are given (a trainer's known
// costs stand in for them), over the levers grad_ckpt=false,true at G = 32.
import { useTempDir } from '@soup/test-utils';
import { tuneExec, type TuneExecOptions } from './tune-exec';

/** Which configuration a filled command is. */
export const ckptOf = (cmd: string): 'false' | 'true' => (/--grad_ckpt true/.test(cmd) ? 'true' : 'false');

/** tuneExec over grad_ckpt=false,true (G = 32, a 400 MiB budget, no cache) with the given runs. */
export async function tuneGradCkpt(o: Pick<TuneExecOptions, 'timeSteps' | 'fit' | 'time'>) {
  const cwd = useTempDir();
  return tuneExec({
    cache: { env: {}, homeDir: cwd, cwd },
    command: 'train --grad_ckpt {grad_ckpt} --micro_batch_size {micro_batch_size} --max_steps {probe_steps}',
    tries: { grad_ckpt: ['false', 'true'] },
    globalBatchSize: 32,
    worldSize: 1,
    budgetBytes: 400 * 2 ** 20,
    gpuName: 'cpu',
    gpuMemoryGb: 0,
    refresh: false,
    noCache: true,
    ...o,
  });
}
