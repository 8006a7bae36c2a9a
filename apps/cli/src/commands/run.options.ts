// `soup run`'s flags (loaded for every `soup` run: keep this file to commander and the option builders).
import { Option } from 'commander';
import { commandSpec } from '../_command';
import {
  budgetOption,
  type GlobalBatchOptions,
  globalBatchOptions,
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
import { appendArg, batchSizeArg, type DeviceSpec, deviceArg, durationArg, intAtLeast } from '../_parse';

export interface RunOptions extends StoreOptions, SearchOptions, GlobalBatchOptions, SessionMemoryOptions {
  /** @default 'model' */
  repoType: 'model' | 'dataset';
  batchSize?: number | 'auto';
  probe?: string;
  base?: string;
  maxLength?: number;
  /** @default 'none' */
  quantization: string;
  /** @default 0 */
  loraR: number;
  device?: DeviceSpec;
  start?: number;
  ceiling?: number;
  refresh?: boolean;
  cacheExceptionsOnly?: boolean;
  /** @default 'checkpoint-*' */
  checkpointGlob: string;
  stepRegex?: string;
  /** @default 'trainer_state.json' */
  completeFile: string;
  /** Milliseconds, like every duration below. */
  settle?: number;
  timeLimit?: number;
  /** As typed: run() checks it against the signals the supervisor can send. @default 'SIGTERM' */
  stopSignal: string;
  grace?: number;
  horizon?: number;
  final?: string;
  fingerprint?: string[];
  poll?: number;
  /** @default 10 */
  pushNice: number;
  squashHistory?: boolean | 'auto';
  /** Milliseconds. @default the store's: 5m on the Hub, 0 on a directory */
  minCommitInterval?: number;
  /** @default the store's: 2m on a directory, 10m on the Hub */
  leaseTtl?: number;
  /** false with --no-wait-lease. @default true */
  waitLease?: boolean;
  takeOverLease?: string;
  json?: boolean;
  /** `NAME=v1,v2`, one per --try. */
  try?: string[];
  timeSteps?: number;
  stepsPattern?: string;
  stepsFile?: string;
  /** Several nodes: this node, the node count, the notes folder, scontrol requeue (@soup/supervisor's rules). */
  nodeRank?: number;
  nnodes?: number;
  nodesDir?: string;
  requeue?: boolean;
}

export const runCommand = commandSpec<RunOptions>((program) => {
  const run = program
    .command('run')
    .description(
      'run your own trainer (any command): batch size that fits, resume from the store, push checkpoints while it ' +
        'trains, save at session end',
    )
    .argument(
      '<trainer...>',
      'the trainer command after --, with {batch_size} {output_dir} {resume_from} {max_steps} placeholders, and ' +
        '{micro_batch_size} {grad_accum} with --global-batch-size (no shell)',
    )
    .addOption(new Option('--repo-type <type>', 'Hub repo type').choices(['model', 'dataset']).default('model'))
    .option('--batch-size <n|auto>', '{batch_size}: a number, or auto (batch cache, else --probe)', batchSizeArg)
    .option(
      '--probe <command>',
      "the trainer's one-step command with {batch_size}, run per candidate size for --batch-size auto",
    )
    .option('--base <name>', 'model name in the batch cache key (default: the --probe command)')
    .option('--max-length <n>', 'sequence length in the batch cache key', intAtLeast(1))
    .option('--quantization <q>', 'quantization in the batch cache key (none, 4bit, 8bit)', 'none')
    .option('--lora-r <n>', 'LoRA rank in the batch cache key (0 = full fine-tuning)', intAtLeast(0), 0)
    .option('--device <device>', 'device in the batch cache key and for the probe: cpu, cuda or cuda:N', deviceArg)
    .option('--start <n>', 'first batch size the probe tries', intAtLeast(1))
    .option('--ceiling <n>', 'largest batch size the probe tries (default 4 × start)', intAtLeast(1))
    .option('--refresh', 'probe again even when the batch cache has an answer, and overwrite it')
    .option('--cache-exceptions-only', 'cache an answer whose trials measured no peak (judged by exceptions only)')
    .option('--checkpoint-glob <glob>', 'which entries of {output_dir} are checkpoints', 'checkpoint-*')
    .option('--step-regex <re>', 'the step in a checkpoint name: first capture group (default: the last number)')
    .option(
      '--complete-file <name>',
      "a checkpoint folder counts only once it holds this file ('' for none)",
      'trainer_state.json',
    )
    .option(
      '--settle <duration>',
      'a checkpoint unchanged this long is complete (with its --complete-file also: a newer one appeared, or the ' +
        'trainer exited); default 10s',
      durationArg,
    )
    .option(
      '--time-limit <duration>',
      'end the session after this long (e.g. 8h45m), saving and pushing first',
      durationArg,
    )
    .option('--stop-signal <signal>', 'what the trainer gets at session end', 'SIGTERM')
    .option(
      '--grace <duration>',
      'how long the trainer may take to save and exit before SIGKILL; default 2m',
      durationArg,
    )
    .option(
      '--horizon <steps>',
      "the run's total steps: fills {max_steps}; exit 0 before it is a segment (75), not the end (default: " +
        'max_steps from trainer_state.json)',
      intAtLeast(1),
    )
    .option(
      '--final <dir>',
      'push this folder as final/ when the trainer exits 0 (default: the files at the top of --output-dir, else ' +
        'the newest checkpoint)',
    )
    .option(
      '--fingerprint <file>',
      'a file the run depends on (e.g. its config); its sha256 joins the run fingerprint (repeatable)',
      appendArg,
    )
    .option('--poll <duration>', 'how often the output folder is scanned; default 1s', durationArg)
    .option(
      '--push-nice <n>',
      'CPU niceness of soup itself once the trainer runs, so pushes yield to it (0 = unchanged)',
      intAtLeast(0),
      10,
    )
    .option('--json', "print only the result as JSON (the trainer's output goes to stderr)")
    .option(
      '--try <NAME=v1,v2>',
      "with --global-batch-size and --probe: each session picks the value of the trainer's own lever {NAME} " +
        '(repeatable; in the --probe command and the trainer command) and the micro-batch that train fastest at G, ' +
        'measured as soup probe --try does (the tune cache first)',
      appendArg,
    )
    .option('--time-steps <K>', 'with --try: the timing runs take 1, 1 + K and 1 + 2K steps (default 8)', intAtLeast(1))
    .option('--steps-pattern <regex>', "with --try: a regex whose group captures the trainer's step in its output")
    .option('--steps-file <path>', 'with --try: the trainer_state.json a timing run writes, or its folder (in cwd)')
    .option('--node-rank <r>', 'this node; 0 leads (default SLURM_NODEID, else torchrun --node_rank)', intAtLeast(0))
    .option('--nnodes <n>', 'nodes in the run (default SLURM_NNODES, else torchrun --nnodes)', intAtLeast(1))
    .option('--nodes-dir <dir>', "a folder every node shares for soup's notes (default <output-dir>/.soup-nodes)")
    .option('--requeue', 'after a session end is saved and pushed, node 0 runs scontrol requeue $SLURM_JOB_ID')
    .addHelpText(
      'after',
      `
Durations: 30s, 2m, 1h30m, 1d, 500ms; a bare number means seconds; 0 is refused (leave the flag out).
Complete run: the trainer exits 0 with no signal seen by soup AND reaches its horizon (global_step >=
max_steps in trainer_state.json, or --horizon); without a known horizon its own exit 0 is the end.
Complete checkpoint: a folder with --complete-file once settled, a newer one appeared or the trainer
exited; without a marker (files, --complete-file '') only once unchanged for --settle.
Prints the result at the end, the same shape as soup train: RUN_JSON {"ok":…,"status":…,"run":…,"final_step":…}
(--json: the same object alone).

Exit codes: 0 done (or already complete), 75 segment saved (run the same command again; also an exit 0
before the horizon), the trainer's own code when it fails, 2 a refused final/ or a busy output folder,
6 when the store holds another run, 11 when another session holds the store's lease (a live one on this
host; with --no-wait-lease any; with --wait-lease one renewed while waiting) or took it over.

Examples:
  soup run --repo me/run-ckpt --time-limit 11h30m -- \\
    python train.py --output_dir {output_dir} --per_device_train_batch_size 8 --resume_from_checkpoint {resume_from}
  soup run --repo file:///mnt/ckpt --batch-size auto --probe "python train.py --max_steps 1 --bs {batch_size}" -- \\
    python train.py --bs {batch_size} --out {output_dir} --resume {resume_from}
  soup run --repo me/run-ckpt --global-batch-size 32 --probe "python train.py --max_steps 1 --bs {micro_batch_size}" -- \\
    python train.py --bs {micro_batch_size} --accum {grad_accum} --out {output_dir} --resume {resume_from}`,
    );
  repoOption(run, { defaultText: 'file://<output-dir>-ckpt beside the output folder' });
  outputDirOption(run, 'output');
  resumeOption(run);
  keepRemoteOption(run);
  noPredictOption(noCacheOption(budgetOption(run)));
  globalBatchOptions(run);
  maxOomRetriesOption(
    run,
    'with --global-batch-size, a trainer that dies out of memory is resumed from the newest complete checkpoint ' +
      'with the next smaller divisor as the micro-batch',
  );
  leaseOptions(run, '2m on a directory store, 10m on the Hub, where each renewal is a commit');
  return maxMemoryOption(run);
});
