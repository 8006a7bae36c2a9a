import { openStore, resolveResume, type CheckpointStore, type ResumeOutcome } from '@soup/hub-ckpt';
import { readProcStat, type ProcStat } from '@soup/hub-ckpt/proc-stat';

const store: CheckpointStore = openStore({ repo: 'file:///tmp/soup-consumer-never-written' });
export async function where(): Promise<string> {
  const r: ResumeOutcome = await resolveResume({ store, run: 'x' });
  return r.outcome;
}
// @ts-expect-error run is required
void resolveResume({ store });
export const self: ProcStat | null = readProcStat('self');
// @ts-expect-error a pid is a number or 'self'
void readProcStat('init');
