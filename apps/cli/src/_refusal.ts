// A resume refusal, explained by @soup/supervisor (what changed, what to do), as the CLI's ResumeRefusedError.
import { describeRefusal, type DescribeRefusalOptions } from '@soup/supervisor';
import { ResumeRefusedError } from './errors';

/** Rethrows a stale or corrupt checkpoint's refusal as a ResumeRefusedError that explains itself; others as is. */
export async function explainRefusal(err: unknown, opts: DescribeRefusalOptions): Promise<never> {
  const message = await describeRefusal(err, opts);
  if (message === null) throw err;
  throw new ResumeRefusedError(message, { cause: err });
}
