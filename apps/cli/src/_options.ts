// One CLI vocabulary: each concept that more than one command has is declared here once, with its one
// name, default and help text. Old spellings stay as hidden aliases for one release: they still work,
// and print a one-line deprecation notice.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { bytesArg, durationArg, headroomArg, intAtLeast, intervalArg, squashArg } from './_parse';

/** A hidden, deprecated spelling and what it maps to. */
interface Alias {
  /** Commander attribute of the hidden option (e.g. `hubRepo`). */
  from: string;
  /** Its flag as the user typed it (e.g. `--hub-repo`). */
  flag: string;
  /** Attribute of the one real option (e.g. `repo`). */
  to: string;
  /** Its flag (e.g. `--repo`). */
  toFlag: string;
}

const ALIASES = new WeakMap<Command, Alias[]>();
const DEPRECATED_VALUES = new WeakMap<Command, { attr: string; value: string; to: string; notice: string }[]>();

function alias(cmd: Command, a: Alias, takesValue: boolean, short?: string): void {
  const flags = `${short ? `${short}, ` : ''}${a.flag}${takesValue ? ' <value>' : ''}`;
  cmd.addOption(new Option(flags).hideHelp());
  ALIASES.set(cmd, [...(ALIASES.get(cmd) ?? []), a]);
}

/**
 * Maps the deprecated spellings a command line used onto the one name, printing one notice line each.
 * Called before a command reads its options. A value given under both spellings: the new one wins.
 */
export function applyAliases(cmd: Command, warn: (line: string) => void): void {
  for (const a of ALIASES.get(cmd) ?? []) {
    const value: unknown = cmd.getOptionValue(a.from);
    if (value === undefined) continue;
    warn(`${a.flag} is deprecated and goes away in the next minor release: use ${a.toFlag}`);
    if (cmd.getOptionValueSource(a.to) !== 'cli') cmd.setOptionValue(a.to, value);
    cmd.setOptionValue(a.from, undefined);
  }
  for (const d of DEPRECATED_VALUES.get(cmd) ?? []) {
    if (cmd.getOptionValue(d.attr) !== d.value) continue;
    warn(d.notice);
    cmd.setOptionValue(d.attr, d.to);
  }
}

/** The store: `--repo` everywhere (old: `train --hub-repo`). Default `<output-dir>-ckpt` beside the output folder. */
export function repoOption(cmd: Command, opts: { required?: boolean; defaultText?: string } = {}): Command {
  const help =
    `checkpoint store: a Hub repo id (user/name) or file://path` +
    `${opts.defaultText ? ` (default: ${opts.defaultText})` : ''}`;
  if (opts.required) cmd.requiredOption('--repo <repo>', help);
  else cmd.option('--repo <repo>', help);
  alias(cmd, { from: 'hubRepo', flag: '--hub-repo', to: 'repo', toFlag: '--repo' }, true);
  return cmd;
}

/** The output folder: `--output-dir` everywhere (old: `train --output`). */
export function outputDirOption(cmd: Command, defaultText: string, defaultValue?: string): Command {
  const help =
    `the output folder, where the run's checkpoints (checkpoint-N/) and final/ are written (default: ` +
    `${defaultText})`;
  if (defaultValue !== undefined) cmd.option('--output-dir <dir>', help, defaultValue);
  else cmd.option('--output-dir <dir>', help);
  alias(cmd, { from: 'output', flag: '--output', to: 'outputDir', toFlag: '--output-dir' }, true);
  return cmd;
}

/** `-c, --config <file>`: the soup.yaml a command reads, or (`soup init`) writes. Old `init -o/--output`. */
export function configOption(cmd: Command, opts: { initAlias?: boolean; defaultText?: string } = {}): Command {
  const help =
    `the run config: soup init writes it, the other commands read it` +
    `${opts.defaultText ? ` (default: ${opts.defaultText})` : ''}`;
  if (opts.defaultText) cmd.option('-c, --config <file>', help);
  else cmd.option('-c, --config <file>', help, 'soup.yaml');
  if (opts.initAlias) alias(cmd, { from: 'output', flag: '--output', to: 'config', toFlag: '-c/--config' }, true, '-o');
  return cmd;
}

/** `--repo`, `--output-dir`, `--resume` and `--keep-remote`: where a session's checkpoints go and come from. */
export interface StoreOptions {
  repo?: string;
  outputDir?: string;
  /** @default 'auto' */
  resume: ResumeMode;
  keepRemote?: number;
}

/** `--budget`, `--no-cache` and `--no-predict`: how a batch size is searched. */
export interface SearchOptions {
  /** Bytes. */
  budget?: number;
  /** False with --no-cache. @default true */
  cache: boolean;
  /** False with --no-predict. @default true */
  predict: boolean;
}

/** `--global-batch-size`, `--world-size`, `--headroom` (a fraction). */
export interface GlobalBatchOptions {
  globalBatchSize?: number;
  worldSize?: number;
  headroom?: number;
}

/** `--max-oom-retries` and `--max-memory` (a size, or a fraction of the budget, checked once the budget is known). */
export interface SessionMemoryOptions {
  /** @default 3 */
  maxOomRetries: number;
  maxMemory?: string;
}

/** The resume modes, the same set in `soup train` and `soup run`. */
export const RESUME_MODES = ['auto', 'never', 'force'] as const;
export type ResumeMode = (typeof RESUME_MODES)[number];

/**
 * `--resume auto|never|force` (default auto). `fallback` (old `soup train` spelling) is accepted with a
 * notice: auto now walks back past a corrupt checkpoint in every command.
 */
export function resumeOption(cmd: Command): Command {
  DEPRECATED_VALUES.set(cmd, [
    ...(DEPRECATED_VALUES.get(cmd) ?? []),
    {
      attr: 'resume',
      value: 'fallback',
      to: 'auto',
      notice:
        '--resume fallback is deprecated and goes away in the next minor release: --resume auto now walks back ' +
        'past a corrupt checkpoint',
    },
  ]);
  return cmd.addOption(
    new Option(
      '--resume <mode>',
      'auto: continue this run from the newest checkpoint that verifies and pulls cleanly (walking back past a ' +
        "corrupt one, and saying so), refusing another run's store; " +
        "never: start fresh, refusing a store that already holds checkpoints; force: continue the store's run " +
        "even though this run's fingerprint differs (and say so)",
    )
      .argParser((v: string): ResumeMode | 'fallback' => {
        if (v === 'fallback') return v; // mapped to auto, with its notice, by applyAliases before run() sees it
        const mode = RESUME_MODES.find((m) => m === v);
        if (mode === undefined)
          throw new InvalidArgumentError(`expected one of ${RESUME_MODES.join(', ')}, got "${v}"`);
        return mode;
      })
      .default('auto'),
  );
}

/** Remote checkpoints kept, newest first: one default (3) everywhere, at least 2 so one older stays to fall back to. */
export const KEEP_REMOTE_DEFAULT = 3;
export function keepRemoteOption(
  cmd: Command,
  defaultText = String(KEEP_REMOTE_DEFAULT),
  defaultValue?: number,
): Command {
  const description =
    'remote checkpoints to keep, newest first; at least 2, so an older one stays to fall back to when the newest ' +
    'is corrupt';
  // With a value, commander states the default itself: the text would say it twice.
  const option = new Option(
    '--keep-remote <n>',
    defaultValue === undefined ? `${description} (default: ${defaultText})` : description,
  ).argParser(intAtLeast(2));
  if (defaultValue !== undefined) option.default(defaultValue, defaultText);
  return cmd.addOption(option);
}

/** `--budget`: the memory a step may use. */
export function budgetOption(cmd: Command, defaultText = 'what the device has free'): Command {
  return cmd.option(
    '--budget <size>',
    `memory a step may use, e.g. 6GiB (default: ${defaultText}; on the CPU without one a trial is judged by what ` +
      `it raised only, and such an answer is not cached)`,
    bytesArg,
  );
}

/** `--no-cache`: one meaning and one description everywhere. */
export function noCacheOption(cmd: Command): Command {
  return cmd.option('--no-cache', 'neither read nor write the batch cache (probe every time)');
}

/** `--no-predict`: the search, the same in probe / plan / train / run (predictive unless this is given). */
export function noPredictOption(cmd: Command): Command {
  return cmd.option('--no-predict', 'plain bisection: do not jump to the edge the measured peaks predict');
}

/**
 * The three numbers of `soup run` / `soup probe --exec`: `--global-batch-size G` (samples per optimizer
 * step, fixed for the run), `--world-size N` (ranks sharing G) and `--headroom` (what a micro-batch's
 * measured peak must leave free). The probe answers m, a divisor of G / N; a = G / (m × N).
 */
export function globalBatchOptions(cmd: Command): Command {
  return cmd
    .option(
      '--global-batch-size <G>',
      'samples per optimizer step, fixed for the run (part of its fingerprint): soup picks the micro-batch m, a ' +
        'divisor of G / world size that fits this device, and fills {micro_batch_size} ({batch_size} too) and ' +
        '{grad_accum} = G / (m × world size)',
      intAtLeast(1),
    )
    .option(
      '--world-size <N>',
      "ranks sharing the global batch (a launcher's processes): a = G / (m × N) (default: 1)",
      intAtLeast(1),
    )
    .option(
      '--headroom <percent>',
      'accept only micro-batches whose measured peak leaves this much of the budget free, e.g. 10% (peak ≤ 90 % ' +
        'of the budget)',
      headroomArg,
    );
}

/** `--max-oom-retries`: the same flag in soup train and soup run. */
export function maxOomRetriesOption(cmd: Command, what: string): Command {
  return cmd.option('--max-oom-retries <n>', `${what}, at most n times a session`, intAtLeast(0), 3);
}

/** `--max-memory`: warn once, naming the step, when the session's peak passes it. */
export function maxMemoryOption(cmd: Command): Command {
  return cmd.option(
    '--max-memory <size|fraction>',
    "warn once, naming the step, when the session's peak memory passes this (6GiB, or 0.9 / 90% of the budget)",
  );
}

/**
 * The store's flags of `run` and `train`: `--lease-ttl` (its default said in `ttlDefaultText`), waiting for
 * another host's lease, taking one over by its id, and the commit budget (interval, history squash).
 */
export function leaseOptions(cmd: Command, ttlDefaultText: string): Command {
  return cmd
    .option(
      '--lease-ttl <duration>',
      `this session's one-writer lease on the store lasts this long without renewal (renewed every third; default: ` +
        `${ttlDefaultText})`,
      durationArg,
    )
    .option('--wait-lease', "wait (with a countdown) for another host's lease on the store to expire (default)")
    .option('--no-wait-lease', "exit 11 at once when another host's lease on the store is live")
    .option(
      '--take-over-lease <lease-id>',
      'take the store lease with this id at once (its session is known dead: a preempted VM); the exit-11 message ' +
        'names it',
    )
    .option(
      '--min-commit-interval <time>',
      'least time between two pushes; saves meanwhile coalesce, the session end never waits (default: 5m on the Hub)',
      intervalArg,
    )
    .option(
      '--squash-history [mode]',
      "squash the Hub repo's history: auto past 500 commits (default), prune (bare) after each prune, off",
      squashArg,
    );
}
