import type { CommandContext } from '../_context';
// TEMPORARY while the packages this command assembles are written.
export async function run(_opts: Record<string, unknown>, _ctx: CommandContext): Promise<void> {
  throw new Error('not implemented yet');
}
export const runPush = run, runFinal = run, runStatus = run, runPull = run, runResume = run;
