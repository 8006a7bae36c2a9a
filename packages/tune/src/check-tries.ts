// `--try` with the flags it needs beside it (a validator: it returns its errors, the caller refuses the first):
// the tuner compares samples per second at a fixed global batch, times the trainer through {probe_steps}, and a
// lever it chooses must reach the trainer that runs.
import { checkStepsEvidence, type StepsEvidence } from '@soup/cuda-probe';
import { parseTries } from './parse-tries';

/** Options of {@link checkTries}. */
export interface CheckTriesOptions {
  /** `--try NAME=v1,v2` values as given; absent: no tuning asked for. */
  tries: readonly string[] | undefined;
  /** `--time-steps` (applies only to `--try`). */
  timeSteps: number | undefined;
  /** `--global-batch-size`. */
  globalBatchSize: number | undefined;
  /** The timed command as typed: {probe_steps} and each {NAME}; absent: no command was given (`--probe`). */
  command: string | undefined;
  /** How the errors name the command, e.g. `the command` or `the --probe command`. @default 'the command' */
  commandName?: string;
  /** The trainer's own argv (`soup run`): each lever must appear in it as {NAME}. */
  argv?: readonly string[];
  /** `--steps-pattern` and `--steps-file` (apply only to `--try`): how a timing run shows its steps. */
  steps?: StepsEvidence;
}

/** The levers and their values (`NAME → values`), and why the flags are refused (the first error is the answer). */
export function checkTries(o: CheckTriesOptions): { tries: Record<string, string[]>; errors: string[] } {
  const refuse = (error: string) => ({ tries: {}, errors: [error] });
  const flag = o.timeSteps !== undefined ? '--time-steps' : o.steps?.pattern !== undefined ? '--steps-pattern' : null;
  if (o.tries === undefined)
    return flag === null && o.steps?.file === undefined
      ? { tries: {}, errors: [] }
      : refuse(`${flag ?? '--steps-file'} applies to --try (the timing runs of the tuner)`);
  const stepsError = checkStepsEvidence(o.steps ?? {}, { pattern: '--steps-pattern', file: '--steps-file' })[0];
  if (stepsError !== undefined) return refuse(stepsError);
  if (o.globalBatchSize === undefined)
    return refuse('--try needs --global-batch-size G: the tuner compares samples per second at a fixed global batch');
  if (o.command === undefined)
    return refuse(
      '--try needs --probe "<the trainer\'s command with {micro_batch_size}, {probe_steps} and each {NAME}>": ' +
        'soup times it per configuration',
    );
  if (!o.command.includes('{probe_steps}'))
    return refuse(
      `--try times the trainer: put {probe_steps} in ${o.commandName ?? 'the command'} where it takes the number ` +
        'of training steps (soup runs 1, 1 + K and 1 + 2K)',
    );
  const parsed = parseTries(o.tries, o.command);
  if (parsed.errors.length > 0 || o.argv === undefined) return parsed;
  const argv = o.argv;
  const missing = Object.keys(parsed.tries).find((name) => !argv.some((a) => a.includes(`{${name}}`)));
  if (missing === undefined) return parsed;
  return refuse(
    `--try ${missing}: the trainer command has no {${missing}}, so the choice would not reach the run; put ` +
      `{${missing}} where the trainer takes that setting`,
  );
}
