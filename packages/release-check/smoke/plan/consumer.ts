import {
  type BatchEvent,
  type PreparedRun,
  prepareRun,
  resolveBatch,
  SoupPlanError,
  BudgetUnmeasuredError,
} from '@soup/plan';

export const seen: BatchEvent['type'][] = ['start', 'trial-start', 'trial', 'note', 'done', 'failed'];
export const prepare: (o: Parameters<typeof prepareRun>[0]) => Promise<PreparedRun> = prepareRun;
export const isBase: boolean = new BudgetUnmeasuredError('m') instanceof SoupPlanError;
// @ts-expect-error probe, key, start and noCache are required
void resolveBatch({ env: {}, cwd: '/', signal: new AbortController().signal });
