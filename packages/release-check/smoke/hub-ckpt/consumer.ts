import { openStore, resolveResume, type CheckpointStore, type ResumeOutcome } from '@soup/hub-ckpt';

const store: CheckpointStore = openStore({ repo: 'file:///tmp/soup-consumer-never-written' });
export async function where(): Promise<string> {
  const r: ResumeOutcome = await resolveResume({ store, run: 'x' });
  return r.outcome;
}
// @ts-expect-error run is required
void resolveResume({ store });
