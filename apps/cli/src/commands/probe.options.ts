// `soup probe`'s flags (loaded for every `soup` run: keep this file to commander and the option builders).
import { commandSpec } from '../_command';
import {
  budgetOption,
  configOption,
  type GlobalBatchOptions,
  globalBatchOptions,
  noCacheOption,
  noPredictOption,
  type SearchOptions,
} from '../_options';
import { appendArg, type DeviceSpec, deviceArg, intAtLeast } from '../_parse';

export interface ProbeOptions extends SearchOptions, GlobalBatchOptions {
  /** No default: -c, --model and --exec exclude each other (soup.yaml when none is given). */
  config?: string;
  model?: string;
  exec?: string;
  maxLength?: number;
  /** @default 32000 */
  vocabSize: number;
  base?: string;
  start?: number;
  ceiling?: number;
  device?: DeviceSpec;
  /** Seconds. @default 600 */
  timeout: number;
  refresh?: boolean;
  cacheExceptionsOnly?: boolean;
  /** `NAME=v1,v2`, one per --try. */
  try?: string[];
  timeSteps?: number;
  stepsPattern?: string;
  stepsFile?: string;
  json?: boolean;
}

export const probeCommand = commandSpec<ProbeOptions>((program) => {
  const probe = program
    .command('probe')
    .description('find the largest batch size that fits, by running one real step per candidate')
    .option('--model <file.onnx>', 'probe any ONNX model: one session.run per candidate on a synthetic batch')
    .option('--exec <command>', 'probe any trainer: run this command per candidate, {batch_size} replaced (no shell)')
    .option(
      '--max-length <n>',
      'sequence length for --model / --exec (default: data.max_length of the config, else 512)',
      intAtLeast(8),
    )
    .option('--vocab-size <n>', 'vocabulary size for --model (keeps the pad id in range)', intAtLeast(2), 32000)
    .option(
      '--base <name>',
      'model name in the cache key for --model / --exec (default: derived from the file or command)',
    )
    .option('--start <n>', 'first batch size tried (default: training.static_batch_size, else 8)', intAtLeast(1))
    .option('--ceiling <n>', 'largest batch size tried (default: 4 × start)', intAtLeast(1))
    .option('--device <device>', "cpu, cuda or cuda:N (default: the config's device, else cpu)", deviceArg)
    .option('--timeout <seconds>', 'kill a trial after this long', intAtLeast(1), 600)
    .option('--refresh', 'probe again even when the cache has an answer, and overwrite it')
    .option(
      '--cache-exceptions-only',
      'cache the answer even when no trial measured a peak (only a failure could refuse a size)',
    )
    .option(
      '--try <NAME=v1,v2>',
      "with --exec and --global-batch-size: also try these values of the trainer's own lever {NAME} (repeatable), " +
        'time each configuration at its largest micro-batch ({probe_steps} = 1, 1 + K, 1 + 2K) and pick the most ' +
        'samples per second',
      appendArg,
    )
    .option(
      '--time-steps <K>',
      'with --try: K: the timing runs take 1, 1 + K and 1 + 2K steps (default 8)',
      intAtLeast(1),
    )
    .option('--steps-pattern <regex>', "with --try: a regex whose group captures the trainer's step in its output")
    .option('--steps-file <path>', 'with --try: the trainer_state.json a timing run writes, or its folder (in cwd)')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Examples:
  soup probe                                   # the model of ./soup.yaml
  soup probe --model model.onnx --max-length 256 --budget 6GiB
  soup probe --exec "python train.py --bs {batch_size} --max-steps 1" --max-length 1024
  soup probe --exec "python train.py --bs {micro_batch_size} --grad-ckpt {grad_ckpt} --max-steps {probe_steps}" \\
    --global-batch-size 128 --try grad_ckpt=true,false --budget 14.5GiB`,
    );
  configOption(probe, { defaultText: 'soup.yaml, when neither --model nor --exec' });
  budgetOption(probe, 'training.memory_budget of the config, else what the device has free');
  noCacheOption(probe);
  noPredictOption(probe);
  return globalBatchOptions(probe);
});
