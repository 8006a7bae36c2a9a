// `soup ckpt push|final|status|list|pull|resume`'s flags (loaded for every `soup` run: keep this file to commander and
// the option builders).
import { type Command, Option } from 'commander';
import { commandSpec } from '../_command';
import { KEEP_REMOTE_DEFAULT, keepRemoteOption } from '../_options';
import { intAtLeast } from '../_parse';

/** `--repo`, `--repo-type`, `--json`: every ckpt subcommand's store. */
export interface CkptRepoOptions {
  repo: string;
  /** @default 'model' */
  repoType: 'model' | 'dataset';
  json?: boolean;
}

/** The `soup ckpt` group; its subcommands hang under it. */
export function defineCkptGroup(program: Command): Command {
  return program
    .command('ckpt')
    .description('push → verify → pointer → prune for checkpoints written by any trainer')
    .addHelpText(
      'after',
      `
Examples (a PyTorch loop calls these after each save):
  soup ckpt push out/checkpoint-200 --repo me/run-ckpt --run my-run-v1   # step from trainer_state.json
  soup ckpt final out/final --repo me/run-ckpt --run my-run-v1
  soup ckpt resume --repo me/run-ckpt --run my-run-v1 --dest out/resume
  soup ckpt status --repo file:///mnt/shared/run-ckpt
  soup ckpt list --repo me/run-ckpt --json`,
    );
}

const repoOpts = (c: Command): Command =>
  c
    .requiredOption('--repo <repo>', 'a Hub repo id (user/name) or file://path')
    .addOption(new Option('--repo-type <type>', 'Hub repo type').choices(['model', 'dataset']).default('model'))
    .option('--json', 'print the result as JSON');

export interface CkptPushOptions extends CkptRepoOptions {
  step?: number;
  run: string;
  keepLocal?: number;
  /** @default KEEP_REMOTE_DEFAULT (3) */
  keepRemote: number;
  force?: boolean;
  public?: boolean;
}

export interface CkptFinalOptions extends CkptRepoOptions {
  run: string;
  step?: number;
  force?: boolean;
  public?: boolean;
}

export interface CkptStatusOptions extends CkptRepoOptions {
  plot?: string;
}

export interface CkptPullOptions extends CkptRepoOptions {
  step?: number;
  final?: boolean;
  dest: string;
  force?: boolean;
}

export interface CkptResumeOptions extends CkptRepoOptions {
  run: string;
  dest?: string;
  force?: boolean;
  fallback?: boolean;
  repair?: boolean;
}

export const ckptPushCommand = commandSpec<CkptPushOptions>((ckpt) => {
  const push = ckpt
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
    );
  return repoOpts(
    keepRemoteOption(push, undefined, KEEP_REMOTE_DEFAULT)
      .option('--force', 'move latest.json even to a lower step or off a terminal (complete) pointer')
      .option('--public', 'create the Hub repo public (default private)'),
  );
});

export const ckptFinalCommand = commandSpec<CkptFinalOptions>((ckpt) =>
  repoOpts(
    ckpt
      .command('final')
      .description('push the finished model as final/ and point the pointer at it (terminal)')
      .argument('<dir>', 'the final checkpoint folder')
      .requiredOption('--run <id>', 'run fingerprint')
      .option('--step <n>', 'the final step (default: global_step of <dir>/trainer_state.json)', intAtLeast(0))
      .option('--force', 'move latest.json even to a lower step')
      .option('--public', 'create the Hub repo public (default private)'),
  ),
);

export const ckptStatusCommand = commandSpec<CkptStatusOptions>((ckpt) =>
  repoOpts(
    ckpt
      .command('status')
      .description('show the pointer, the checkpoints of a repo and the loss curve of the pointed checkpoint')
      .option('--plot <file.svg>', 'also write the loss curve as an SVG'),
  ),
);

export const ckptListCommand = commandSpec<CkptRepoOptions>((ckpt) =>
  repoOpts(
    ckpt
      .command('list')
      .description(
        "list the store's checkpoints: step, files, bytes (manifest.json aside, as push counts) and when pushed",
      ),
  ),
);

export const ckptPullCommand = commandSpec<CkptPullOptions>((ckpt) =>
  repoOpts(
    ckpt
      .command('pull')
      .description('download a checkpoint and check every file against its manifest')
      .option('--step <n>', 'which checkpoint (default: the one the pointer names)', intAtLeast(0))
      .option('--final', 'pull final/')
      .requiredOption('--dest <dir>', 'where to put it (must not exist)')
      .option('--force', 'replace --dest when it exists'),
  ),
);

export const ckptResumeCommand = commandSpec<CkptResumeOptions>((ckpt) =>
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
  ),
);
