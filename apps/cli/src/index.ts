import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { ignoreClosedPipe } from './_closed-pipe';
import { makeContext, type CliIo, type CommandContext } from './_context';
import { markRequiredOptions, subcommandNames } from './_help';
import {
  applyAliases,
  budgetOption,
  configOption,
  globalBatchOptions,
  KEEP_REMOTE_DEFAULT,
  keepRemoteOption,
  maxMemoryOption,
  maxOomRetriesOption,
  noCacheOption,
  noPredictOption,
  outputDirOption,
  repoOption,
  resumeOption,
} from './_options';
import { deviceArg, durationArg, intAtLeast } from './_parse';
import { ConfigError, InterruptedError } from './errors';
import { EXIT_CODES, exitCodeFor, exitCodesHelp } from './exit-codes';

export { EXIT_CODES, exitCodeFor, type ExitCodeName } from './exit-codes';
export {
  validateConfig,
  type SoupConfig,
  type ValidateConfigOptions,
  type ValidateConfigResult,
  type GradCkptSetting,
} from './validate-config';
export { loadConfig, type LoadConfigOptions, type LoadedConfig } from './load-config';
export { didYouMean, type DidYouMeanOptions } from './did-you-mean';
export { parseBytes } from './parse-bytes';
export { formatBytes } from './format-bytes';
export {
  createProgress,
  fitFields,
  formatDuration,
  type Progress,
  type ProgressOptions,
  type ProgressStream,
} from './progress';
export {
  ConfigError,
  UsageError,
  TokenMissingError,
  TrainRunError,
  InterruptedError,
  ResumeRefusedError,
  formatIssue,
  type ConfigIssue,
} from './errors';
export {
  renderLossPlot,
  lossPlotSvg,
  type LossPoint,
  type RenderLossPlotOptions,
  type LossPlotSvgOptions,
} from './loss-plot';
export { runFingerprint, type RunFingerprint, type RunFingerprintOptions, type RunIdentity } from './run-fingerprint';
export type { CliIo } from './_context';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

type Action = (opts: Record<string, unknown>, ctx: CommandContext, args: string[]) => Promise<number | void>;

const EXIT_HELP = `
Exit codes:
${exitCodesHelp()}

Environment:
  HF_TOKEN               Hugging Face token (never printed); else the file HF_TOKEN_PATH names,
                         else $HF_HOME/token, else ~/.cache/huggingface/token (\`hf auth login\`)
  HF_ENDPOINT            Hub endpoint (default https://huggingface.co)
  SOUP_BATCH_CACHE_PATH  batch cache file (default ~/.soup/batch_cache.json)
  NO_COLOR               plain output (no colour)
  TERM=dumb              no colour, no redrawn progress lines`;

/** Builds the `soup` program: one lazily imported module per command. */
export function buildProgram(io: CliIo = {}): Command {
  let exitCode = 0;
  const program = new Command('soup')
    .description('soup makes a training run fit its device and survive the end of its session.')
    .version(pkg.version, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .helpCommand('help [command]', 'show help for a command')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void (io.stdout ?? process.stdout).write(s),
      // Commander's own error text is rewritten into one line by main().
      writeErr: () => {},
      outputError: () => {},
    })
    .addHelpText('after', EXIT_HELP);

  const run = (load: () => Promise<{ run: Action }>) =>
    async function (this: Command, ...args: unknown[]): Promise<void> {
      const cmd = args[args.length - 1] as Command;
      const opts = cmd.opts();
      const positional = cmd.args;
      const ctx = makeContext(io, Boolean(opts.json));
      applyAliases(cmd, opts, (line) => ctx.warn(line));
      const mod = await load();
      const code = await mod.run(opts, ctx, positional);
      if (typeof code === 'number') exitCode = code;
    };

  const init = program
    .command('init')
    .description('write a commented soup.yaml (and its training text) to start from')
    .addOption(
      new Option('-t, --template <name>', 'tiny (trains in seconds on a laptop CPU) or small (minutes)')
        .choices(['tiny', 'small'])
        .default('tiny'),
    );
  configOption(init, { initAlias: true })
    .option('-f, --force', 'overwrite an existing config (training text in data/ is never overwritten)')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', '\nExample:\n  soup init --template tiny && soup train')
    .action(run(() => import('./commands/init')));

  program
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
      "with --exec and --global-batch-size: also try these values of the trainer's own lever {NAME} (repeatable), time each configuration at its largest micro-batch ({probe_steps} = 1, 1 + K, 1 + 2K) and pick the most samples per second",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option(
      '--time-steps <K>',
      'with --try: K: the timing runs take 1, 1 + K and 1 + 2K steps (default 8)',
      intAtLeast(1),
    )
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
    )
    .action(run(() => import('./commands/probe')));
  const probeCmd = program.commands.find((c) => c.name() === 'probe')!;
  configOption(probeCmd, { defaultText: 'soup.yaml, when neither --model nor --exec' });
  budgetOption(probeCmd, 'training.memory_budget of the config, else what the device has free');
  noCacheOption(probeCmd);
  noPredictOption(probeCmd);
  globalBatchOptions(probeCmd);

  const cache = program
    .command('cache')
    .description('the batch cache shared with the Python Soup CLI (~/.soup/batch_cache.json)')
    .addHelpText('after', '\nExamples:\n  soup cache ls\n  soup cache clear --key dcaa220005fb718e145b37b330901237');
  cache
    .command('ls')
    .description('list cached batch sizes')
    .option('--json', 'print the entries as JSON')
    .action(run(async () => ({ run: (await import('./commands/cache')).runLs })));
  cache
    .command('path')
    .description('print the cache file path (and whether SOUP_BATCH_CACHE_PATH was honoured)')
    .option('--json', 'print the result as JSON')
    .action(run(async () => ({ run: (await import('./commands/cache')).runPath })));
  cache
    .command('clear')
    .description('remove every entry, or one with --key')
    .option('--key <key>', 'remove only this entry (32 hex characters, as `soup cache ls` shows)')
    .option('--json', 'print the result as JSON')
    .action(run(async () => ({ run: (await import('./commands/cache')).runClear })));

  const plan = configOption(
    program
      .command('plan')
      .description(
        'show what soup train would do on this device: batch size, checkpointing tier, offload, peak vs budget',
      ),
  ).option('--device <device>', "override the config's device", deviceArg);
  noPredictOption(
    noCacheOption(budgetOption(plan, 'training.memory_budget of the config, else what the device has free')),
  )
    .option('--json', 'print the plan as JSON')
    .action(run(() => import('./commands/plan')));

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
    'an allocation failure raised by a step drops the micro-batch to the next divisor of batch_size and redoes the step',
  );
  maxMemoryOption(train);
  noPredictOption(
    noCacheOption(budgetOption(train, 'training.memory_budget of the config, else what the device has free')),
  )
    .option(
      '--push-every-steps <n>',
      'push a checkpoint every n steps (default: hub.push_every_steps, else steps / 4)',
      intAtLeast(1),
    )
    .option(
      '--stop-after-steps <n>',
      'end this session after n more steps, at a segment boundary the next session resumes from: saved, pushed, exit 75 (0 = run to the horizon)',
      intAtLeast(0),
      0,
    )
    .option(
      '--time-limit <duration>',
      'end this session after this long (e.g. 8h45m): save and push the current step, exit 75 (default: training.time_limit)',
    )
    .option('--steps <n>', 'override training.steps, the horizon', intAtLeast(1))
    .option('--device <device>', "override the config's device", deviceArg)
    .option('--plot <file.svg>', 'also write the loss curve as an SVG (the terminal shows it at the end)')
    .option(
      '--squash-history',
      "squash the Hub repo's history after each prune, so pruned checkpoints' bytes can be freed (default: hub.squash_history)",
    )
    .option(
      '--lease-ttl <duration>',
      "this session's one-writer lease on the store lasts this long without renewal (default: hub.lease_ttl, 10m)",
      durationArg,
    )
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
    )
    .action(run(() => import('./commands/train')));

  program
    .command('run')
    .description(
      'run your own trainer (any command): batch size that fits, resume from the store, push checkpoints while it trains, save at session end',
    )
    .argument(
      '<trainer...>',
      'the trainer command after --, with {batch_size} {output_dir} {resume_from} {max_steps} placeholders, and {micro_batch_size} {grad_accum} with --global-batch-size (no shell)',
    )
    .addOption(new Option('--repo-type <type>', 'Hub repo type').choices(['model', 'dataset']).default('model'))
    .option('--batch-size <n|auto>', '{batch_size}: a number, or auto (batch cache, else --probe)')
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
      'a checkpoint unchanged this long is complete (with its --complete-file also: a newer one appeared, or the trainer exited); default 10s',
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
      "the run's total steps: fills {max_steps}; exit 0 before it is a segment (75), not the end (default: max_steps from trainer_state.json)",
      intAtLeast(1),
    )
    .option(
      '--final <dir>',
      'push this folder as final/ when the trainer exits 0 (default: the files at the top of --output-dir, else the newest checkpoint)',
    )
    .option(
      '--fingerprint <file>',
      'a file the run depends on (e.g. its config); its sha256 joins the run fingerprint (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--poll <duration>', 'how often the output folder is scanned; default 1s', durationArg)
    .option(
      '--push-nice <n>',
      'CPU niceness of soup itself once the trainer runs, so pushes yield to it (0 = unchanged)',
      intAtLeast(0),
      10,
    )
    .option(
      '--squash-history',
      "squash the Hub repo's history after each prune, so pruned checkpoints' bytes can be freed",
    )
    .option(
      '--lease-ttl <duration>',
      "this session's one-writer lease on the store lasts this long without renewal (renewed every third)",
      durationArg,
      600_000,
    )
    .option('--json', "print only the result as JSON (the trainer's output goes to stderr)")
    .option(
      '--try <NAME=v1,v2>',
      "with --global-batch-size and --probe: each session picks the value of the trainer's own lever {NAME} (repeatable; in the --probe command and the trainer command) and the micro-batch that train fastest at G, measured as soup probe --try does (the tune cache first)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--time-steps <K>', 'with --try: the timing runs take 1, 1 + K and 1 + 2K steps (default 8)', intAtLeast(1))
    .addHelpText(
      'after',
      `
Durations: 30s, 2m, 1h30m, 500ms; a bare number means seconds.
Complete run: the trainer exits 0 with no signal seen by soup AND reaches its horizon (global_step >=
max_steps in trainer_state.json, or --horizon); without a known horizon its own exit 0 is the end.
Complete checkpoint: a folder with --complete-file once settled, a newer one appeared or the trainer
exited; without a marker (files, --complete-file '') only once unchanged for --settle.
Prints the result at the end, the same shape as soup train: RUN_JSON {"ok":…,"status":…,"run":…,"final_step":…}
(--json: the same object alone).

Exit codes: 0 done (or already complete), 75 segment saved (run the same command again; also an exit 0
before the horizon), the trainer's own code when it fails, 2 a refused final/ or a busy output folder,
6 when the store holds another run.

Examples:
  soup run --repo me/run-ckpt --time-limit 11h30m -- \\
    python train.py --output_dir {output_dir} --per_device_train_batch_size 8 --resume_from_checkpoint {resume_from}
  soup run --repo file:///mnt/ckpt --batch-size auto --probe "python train.py --max_steps 1 --bs {batch_size}" -- \\
    python train.py --bs {batch_size} --out {output_dir} --resume {resume_from}
  soup run --repo me/run-ckpt --global-batch-size 32 --probe "python train.py --max_steps 1 --bs {micro_batch_size}" -- \\
    python train.py --bs {micro_batch_size} --accum {grad_accum} --out {output_dir} --resume {resume_from}`,
    )
    .action(run(() => import('./commands/run')));
  const runCmd = program.commands.find((c) => c.name() === 'run')!;
  repoOption(runCmd, { defaultText: 'file://<output-dir>-ckpt beside the output folder' });
  outputDirOption(runCmd, 'output');
  resumeOption(runCmd);
  keepRemoteOption(runCmd);
  noPredictOption(noCacheOption(budgetOption(runCmd)));
  globalBatchOptions(runCmd);
  maxOomRetriesOption(
    runCmd,
    'with --global-batch-size, a trainer that dies out of memory is resumed from the newest complete checkpoint with the next smaller divisor as the micro-batch',
  );
  maxMemoryOption(runCmd);

  const ckpt = program
    .command('ckpt')
    .description('push → verify → pointer → prune for checkpoints written by any trainer')
    .addHelpText(
      'after',
      `
Examples (a PyTorch loop calls these after each save):
  soup ckpt push out/checkpoint-200 --repo me/run-ckpt --run my-run-v1   # step from trainer_state.json
  soup ckpt final out/final --repo me/run-ckpt --run my-run-v1
  soup ckpt resume --repo me/run-ckpt --run my-run-v1 --dest out/resume
  soup ckpt status --repo file:///mnt/shared/run-ckpt`,
    );
  const repoOpts = (c: Command): Command =>
    c
      .requiredOption('--repo <repo>', 'a Hub repo id (user/name) or file://path')
      .addOption(new Option('--repo-type <type>', 'Hub repo type').choices(['model', 'dataset']).default('model'))
      .option('--json', 'print the result as JSON');
  repoOpts(
    ckpt
      .command('push')
      .description('push a checkpoint folder as ckpt/checkpoint-<step>, verify it remotely, move the pointer, prune')
      .argument('<dir>', 'the checkpoint folder')
      .option(
        '--step <n>',
        'the training step of this checkpoint (default: global_step of <dir>/trainer_state.json)',
        intAtLeast(0),
      )
      .requiredOption('--run <id>', 'run fingerprint: resume refuses checkpoints of another run')
      .option(
        '--keep-local <n>',
        'checkpoint-<n> folders to keep next to <dir>, newest first (default: all)',
        intAtLeast(0),
      )
      .option(
        '--keep-remote <n>',
        `remote checkpoints to keep, newest first; at least 2, so an older one stays to fall back to when the newest is corrupt (default: ${KEEP_REMOTE_DEFAULT})`,
        intAtLeast(2),
        KEEP_REMOTE_DEFAULT,
      )
      .option('--force', 'move latest.json even to a lower step or off a terminal (complete) pointer')
      .option('--public', 'create the Hub repo public (default private)'),
  ).action(run(async () => ({ run: (await import('./commands/ckpt')).runPush })));
  repoOpts(
    ckpt
      .command('final')
      .description('push the finished model as final/ and point the pointer at it (terminal)')
      .argument('<dir>', 'the final checkpoint folder')
      .requiredOption('--run <id>', 'run fingerprint')
      .option('--step <n>', 'the final step (default: global_step of <dir>/trainer_state.json)', intAtLeast(0))
      .option('--force', 'move latest.json even to a lower step')
      .option('--public', 'create the Hub repo public (default private)'),
  ).action(run(async () => ({ run: (await import('./commands/ckpt')).runFinal })));
  repoOpts(
    ckpt
      .command('status')
      .description('show the pointer, the checkpoints of a repo and the loss curve of the pointed checkpoint')
      .option('--plot <file.svg>', 'also write the loss curve as an SVG'),
  ).action(run(async () => ({ run: (await import('./commands/ckpt')).runStatus })));
  repoOpts(
    ckpt
      .command('pull')
      .description('download a checkpoint and check every file against its manifest')
      .option('--step <n>', 'which checkpoint (default: the one the pointer names)', intAtLeast(0))
      .option('--final', 'pull final/')
      .requiredOption('--dest <dir>', 'where to put it (must not exist)')
      .option('--force', 'replace --dest when it exists'),
  ).action(run(async () => ({ run: (await import('./commands/ckpt')).runPull })));
  repoOpts(
    ckpt
      .command('resume')
      .description(
        'decide where a run resumes (fresh, resume, complete, or refuse), checking that the checkpoint pulls cleanly',
      )
      .requiredOption('--run <id>', 'run fingerprint of the run that wants to resume')
      .option('--dest <dir>', 'pull the checkpoint here (default: pull into a temp folder, report, remove it)')
      .option('--force', 'replace --dest when it exists')
      .option(
        '--fallback',
        'when the chosen checkpoint fails to verify or pull, walk back to the next older one that pulls cleanly',
      )
      .option('--repair', 'rewrite latest.json to the checkpoint resumed from (default: latest.json is never written)'),
  ).action(run(async () => ({ run: (await import('./commands/ckpt')).runResume })));

  markRequiredOptions(program);
  Object.defineProperty(program, 'soupExitCode', { get: () => exitCode });
  return program;
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/^error:\s*/, '');
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[], ioIn: CliIo = {}): Promise<number> {
  // Ctrl-C / SIGTERM: commands stop at the next safe point (a training step, a probe trial); a
  // second signal exits at once.
  const controller = new AbortController();
  let signals = 0;
  const dashesAt = argv.indexOf('--', 2);
  const jsonWanted = argv.slice(2, dashesAt === -1 ? undefined : dashesAt).includes('--json');
  const onSignal = (sig: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      const message = `${sig} again: quitting now (exit ${EXIT_CODES.interrupted}); a push in flight is abandoned, the store's pointer stays on its last verified checkpoint`;
      (ioIn.stderr ?? process.stderr).write(`\nsoup: ${message}\n`);
      // --json always answers with one JSON result: nothing else was printed on stdout yet (results come at the end).
      if (jsonWanted)
        (ioIn.stdout ?? process.stdout).write(
          `${JSON.stringify({ ok: false, outcome: 'interrupted', error: { code: 'SOUP_INTERRUPTED', message, exit_code: EXIT_CODES.interrupted } })}\n`,
        );
      process.exit(EXIT_CODES.interrupted);
    }
    (ioIn.stderr ?? process.stderr).write(`\nsoup: ${sig}: stopping after the current step (again to quit now)\n`);
    // The reason names the signal: soup train reports it with the step it saved.
    controller.abort(new InterruptedError(`interrupted by ${sig}`, { signal: sig }));
  };
  if (ioIn.stdout === undefined) ignoreClosedPipe(process.stdout);
  if (ioIn.stderr === undefined) ignoreClosedPipe(process.stderr);
  const own = ioIn.signal === undefined;
  if (own) {
    // SIGHUP (the terminal or the notebook session went away) ends the session like SIGTERM.
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
  }
  try {
    return await runMain(argv, own ? { ...ioIn, signal: controller.signal } : ioIn);
  } finally {
    if (own) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onSignal);
    }
  }
}

async function runMain(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  const stderr = io.stderr ?? process.stderr;
  const stdout = io.stdout ?? process.stdout;
  const dashes = argv.indexOf('--', 2);
  const json = argv.slice(2, dashes === -1 ? undefined : dashes).includes('--json');
  const fail = (code: number, errCode: string, lines: string[]): number => {
    for (const line of lines) stderr.write(`soup: ${line}\n`);
    if (json)
      stdout.write(
        `${JSON.stringify({ ok: false, error: { code: errCode, message: lines.join('\n'), exit_code: code } })}\n`,
      );
    return code;
  };
  // A bare `soup` prints the help; a bare group (`soup cache`, `soup ckpt`) prints its help on
  // stderr and exits 2: a subcommand is missing.
  const args = argv.slice(2);
  if (args.length === 0) {
    stdout.write(program.helpInformation());
    return EXIT_CODES.ok;
  }
  const group = program.commands.find((c) => c.name() === args[0] && c.commands.length > 0);
  if (group && !args.slice(1).some((a) => !a.startsWith('-') || a === '-h' || a === '--help')) {
    stderr.write(group.helpInformation());
    stderr.write(`\nsoup: ${group.name()} needs a subcommand: ${subcommandNames(group).join(', ')}\n`);
    return EXIT_CODES.usage;
  }
  try {
    await program.parseAsync(argv);
    return (program as unknown as { soupExitCode: number }).soupExitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
        return 0;
      if (err.code === 'commander.executeSubCommandAsync') return err.exitCode;
      // Commander puts "(Did you mean …?)" on a second line: keep one line.
      const msg = err.message
        .replace(/^error:\s*/, '')
        .replace(/\n+/g, ' ')
        .trim();
      const where = commandPath(program, argv);
      return fail(EXIT_CODES.usage, 'SOUP_USAGE', [`${msg} (see: ${where} --help)`]);
    }
    if (err instanceof ConfigError) {
      return fail(exitCodeFor(err), err.code, err.message.split('\n'));
    }
    const e = err instanceof Error ? err : new Error(String(err));
    if (io.signal?.aborted && !(e as { code?: unknown }).code)
      return fail(EXIT_CODES.interrupted, 'SOUP_INTERRUPTED', [`interrupted (${firstLine(e.message)})`]);
    const code = exitCodeFor(err);
    const errCode = (e as { code?: unknown }).code;
    const lines = [firstLine(e.message)];
    if (code === EXIT_CODES.internal && io.env?.SOUP_DEBUG !== '1' && process.env.SOUP_DEBUG !== '1') {
      lines[0] = `${lines[0]} (${e.name}; set SOUP_DEBUG=1 for details)`;
    }
    if ((io.env ?? process.env).SOUP_DEBUG === '1') stderr.write(`${e.stack ?? e.message}\n`);
    return fail(code, typeof errCode === 'string' ? errCode : 'SOUP_INTERNAL', lines);
  }
}

/** `soup`, `soup ckpt` or `soup ckpt push`: the deepest real command the arguments name. */
function commandPath(program: Command, argv: string[]): string {
  const words = ['soup'];
  let cmd: Command = program;
  for (const arg of argv.slice(2)) {
    if (arg.startsWith('-')) break;
    const sub = cmd.commands.find((c) => c.name() === arg);
    if (!sub) break;
    words.push(arg);
    cmd = sub;
  }
  return words.join(' ');
}
