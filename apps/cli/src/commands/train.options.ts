// `soup train`'s flags (loaded for every `soup` run: keep this file to commander and the option builders).
import { Option } from 'commander';
import { commandSpec } from '../_command';
import {
  budgetOption,
  configOption,
  KEEP_REMOTE_DEFAULT,
  keepRemoteOption,
  leaseOptions,
  maxMemoryOption,
  maxOomRetriesOption,
  noCacheOption,
  noPredictOption,
  outputDirOption,
  repoOption,
  resumeOption,
  type SearchOptions,
  type SessionMemoryOptions,
  type StoreOptions,
} from '../_options';
import { type DeviceSpec, deviceArg, durationArg, intAtLeast } from '../_parse';

/** Default of `--max-oom-retries`. */
export const MAX_OOM_RETRIES = 3;

export interface TrainOptions extends StoreOptions, SearchOptions, SessionMemoryOptions {
  /** @default 'soup.yaml' */
  config: string;
  pushEverySteps?: number;
  /** 0: run to the horizon. @default 0 */
  stopAfterSteps: number;
  /** Milliseconds; wins over training.time_limit. */
  timeLimit?: number;
  steps?: number;
  extendTo?: number;
  device?: DeviceSpec;
  plot?: string;
  squashHistory?: boolean | 'auto';
  /** Milliseconds. */
  minCommitInterval?: number;
  /** Milliseconds. */
  leaseTtl?: number;
  /** false with --no-wait-lease. @default true */
  waitLease?: boolean;
  takeOverLease?: string;
  json?: boolean;
}

export const trainCommand = commandSpec<TrainOptions>((program) => {
  const train = configOption(
    program
      .command('train')
      .description(
        "train the config's model, pushing checkpoints as it goes; stop at a segment boundary; resume from the Hub",
      ),
  );
  repoOption(train, { defaultText: 'hub.repo, else file://<output-dir>-ckpt beside the output folder' });
  outputDirOption(train, 'output of the config');
  resumeOption(train);
  keepRemoteOption(train, `hub.keep_remote, else ${KEEP_REMOTE_DEFAULT}`);
  maxOomRetriesOption(
    train,
    'an allocation failure raised by a step drops the micro-batch to the next divisor of batch_size and redoes ' +
      'the step',
  );
  leaseOptions(train, 'hub.lease_ttl, else 2m on a directory store and 10m on the Hub');
  maxMemoryOption(train);
  return noPredictOption(
    noCacheOption(budgetOption(train, 'training.memory_budget of the config, else what the device has free')),
  )
    .option(
      '--push-every-steps <n>',
      'push a checkpoint every n steps (default: hub.push_every_steps, else steps / 4)',
      intAtLeast(1),
    )
    .option(
      '--stop-after-steps <n>',
      'end this session after n more steps, at a segment boundary the next session resumes from: saved, pushed, ' +
        'exit 75 (0 = run to the horizon)',
      intAtLeast(0),
      0,
    )
    .option(
      '--time-limit <duration>',
      'end this session after this long (8h45m, 90m, 30s, 1d; a bare number is seconds): save and push the ' +
        'current step, exit 75 (default: training.time_limit)',
      durationArg,
    )
    .option('--steps <n>', 'override training.steps, the horizon (a new run: the schedule follows it)', intAtLeast(1))
    .addOption(
      new Option(
        '--extend-to <n>',
        'continue this run, finished or not, to n steps on its own schedule: the learning rate stays at its minimum ' +
          'past training.steps (or training.schedule_steps); recorded in soup_run.json',
      )
        .argParser(intAtLeast(1))
        .conflicts('steps'),
    )
    .option('--device <device>', "override the config's device", deviceArg)
    .option('--plot <file.svg>', 'also write the loss curve as an SVG (the terminal shows it at the end)')
    .option('--json', 'print only the final result as JSON (progress stays on stderr)')
    .addHelpText(
      'after',
      `
Prints the result at the end, the same shape as soup run (--json: the same object alone):
  RUN_JSON {"ok":true,"status":"finished"|"segment"|"complete","run":"<fingerprint>","final_step":…,
            "segment_stop":…,"batch_size":G,"micro_batch_size":m,"grad_accum":a,"micro_batch":"m × a = G",
            "memory":{"peak_bytes":…,"peak_at":"step 12",…},"final_loss":…,"val_loss":…,"tokens_per_s":…,
            "train_s":…,"elapsed_s":…}

Examples:
  soup train -c soup.yaml
  soup train --repo me/my-run-ckpt --push-every-steps 50 --stop-after-steps 200   # session 1 (exit 75)
  soup train --repo me/my-run-ckpt --push-every-steps 50                          # session 2: resumes
  soup train --repo me/my-run-ckpt --time-limit 8h45m                             # a 9 h Kaggle session

Session end: on --stop-after-steps, --time-limit, SIGTERM or SIGINT the step running then completes, no
new step starts, and that step is saved and pushed (push, verify, pointer, prune); then soup exits 75:
run the same command again to continue. A second SIGTERM / SIGINT quits at once (exit 130).`,
    );
});
