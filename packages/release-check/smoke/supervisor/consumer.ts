import { judgeHorizon, supervise, type SuperviseOutcome } from '@soup/supervisor';
import { openStore } from '@soup/hub-ckpt';
import { createSignalJudge, type SignalVerdict } from '@soup/supervisor/signals';

export async function once(): Promise<SuperviseOutcome['outcome']> {
  const r = await supervise({
    argv: ['true'],
    store: openStore({ repo: 'file:///tmp/soup-consumer-never-written' }),
    outputDir: '/tmp/o',
    cwd: '/tmp',
    env: {},
    signal: new AbortController().signal,
  });
  return r.outcome;
}
export const v: boolean = judgeHorizon({ states: [], checkpointStep: null, horizon: null }).complete;
// @ts-expect-error store is required
void supervise({ argv: ['true'], outputDir: '/tmp/o', cwd: '/tmp', env: {}, signal: new AbortController().signal });
export const first: SignalVerdict = createSignalJudge().judge('SIGTERM');
