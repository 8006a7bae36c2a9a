// The predictive phase of probeBatchSize: where the trials report measured peaks, a peak model
// picks the next sizes; every trial is made only while refine's bisection after it could not
// exceed the most trials refine makes for this start and ceiling.
import { censoredSearch } from './_predict-censored';
import { type PredictContext, predictTools } from './_predict-context';
import { uncensoredSearch } from './_predict-uncensored';

export type { PredictContext, SearchState } from './_predict-context';

export async function predictSearch(ctx: PredictContext): Promise<void> {
  const tools = predictTools(ctx);
  const censoring = ctx.trials.some((t) => t.censored === true || t.censorsFailures === true);
  await (censoring ? censoredSearch(ctx, tools) : uncensoredSearch(ctx, tools));
}
