import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { ignoreClosedPipe } from './_closed-pipe';
import type { CommandSpec, JsonOption, Run } from './_command';
import { makeContext, soupLines, type CliIo } from './_context';
import { markRequiredOptions, subcommandNames } from './_help';
import { applyAliases } from './_options';
import { cacheClearCommand, cacheLsCommand, cachePathCommand, defineCacheGroup } from './commands/cache.options';
import {
  ckptFinalCommand,
  ckptListCommand,
  ckptPullCommand,
  ckptPushCommand,
  ckptResumeCommand,
  ckptStatusCommand,
  defineCkptGroup,
} from './commands/ckpt.options';
import { initCommand } from './commands/init.options';
import { planCommand } from './commands/plan.options';
import { probeCommand } from './commands/probe.options';
import { runCommand } from './commands/run.options';
import { trainCommand } from './commands/train.options';
import { ConfigError } from '@soup/config';
import { createSignalJudge, SESSION_SIGNALS } from '@soup/supervisor/signals';
import { InterruptedError } from './errors';
import { EXIT_CODES, exitCodeFor, exitCodesHelp } from './exit-codes';

export { EXIT_CODES, exitCodeFor, type ExitCodeName } from './exit-codes';
// The CLI's library API is the program itself: soup.yaml's checks, the progress renderer and the loss plot are
// imported from their own packages (@soup/config, @soup/progress, @soup/loss-plot).
export {
  UsageError,
  TokenMissingError,
  TrainRunError,
  InterruptedError,
  ResumeRefusedError,
} from './errors';
export type { CliIo } from './_context';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

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

  // Adds a command from its spec; its module (and what it imports) loads only when the command runs.
  const wire = <O extends JsonOption>(parent: Command, spec: CommandSpec<O>, load: () => Promise<Run<O>>): void => {
    const cmd = spec.define(parent);
    cmd.action(async () => {
      const warnings: string[] = [];
      applyAliases(cmd, (line) => warnings.push(line));
      const opts = cmd.opts<O>();
      const ctx = makeContext(io, opts.json === true);
      for (const line of warnings) ctx.warn(line);
      const code = await (await load())(opts, ctx, cmd.args);
      if (typeof code === 'number') exitCode = code;
    });
  };

  wire(program, initCommand, async () => (await import('./commands/init')).run);
  wire(program, probeCommand, async () => (await import('./commands/probe')).run);
  const cache = defineCacheGroup(program);
  wire(cache, cacheLsCommand, async () => (await import('./commands/cache')).runLs);
  wire(cache, cachePathCommand, async () => (await import('./commands/cache')).runPath);
  wire(cache, cacheClearCommand, async () => (await import('./commands/cache')).runClear);
  wire(program, planCommand, async () => (await import('./commands/plan')).run);
  wire(program, trainCommand, async () => (await import('./commands/train')).run);
  wire(program, runCommand, async () => (await import('./commands/run')).run);
  const ckpt = defineCkptGroup(program);
  wire(ckpt, ckptPushCommand, async () => (await import('./commands/ckpt')).runPush);
  wire(ckpt, ckptFinalCommand, async () => (await import('./commands/ckpt')).runFinal);
  wire(ckpt, ckptStatusCommand, async () => (await import('./commands/ckpt')).runStatus);
  wire(ckpt, ckptListCommand, async () => (await import('./commands/ckpt')).runList);
  wire(ckpt, ckptPullCommand, async () => (await import('./commands/ckpt')).runPull);
  wire(ckpt, ckptResumeCommand, async () => (await import('./commands/ckpt')).runResume);

  markRequiredOptions(program);
  Object.defineProperty(program, 'soupExitCode', { get: () => exitCode });
  return program;
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/^error:\s*/, '');
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[], ioIn: CliIo = {}): Promise<number> {
  // Ctrl-C / SIGTERM / SIGHUP / SIGUSR1 / SIGUSR2: commands stop at the next safe point (a training step, a probe
  // trial); a second signal of a kind already received exits at once (@soup/supervisor's createSignalJudge).
  const controller = new AbortController();
  const signals = createSignalJudge();
  const dashesAt = argv.indexOf('--', 2);
  const jsonWanted = argv.slice(2, dashesAt === -1 ? undefined : dashesAt).includes('--json');
  const onSignal = (sig: NodeJS.Signals): void => {
    const verdict = signals.judge(sig);
    if (verdict === 'same-end') {
      (ioIn.stderr ?? process.stderr).write(
        `\nsoup: ${sig}: the session is already ending (${signals.first}); ${signals.first} again quits now\n`,
      );
      return;
    }
    if (verdict === 'quit') {
      const message =
        `${sig} again: quitting now (exit ${EXIT_CODES.interrupted}); a push in flight is ` +
        `abandoned, the store's pointer stays on its last verified checkpoint`;
      (ioIn.stderr ?? process.stderr).write(`\nsoup: ${message}\n`);
      // --json always answers with one JSON result: nothing else was printed on stdout yet (results come at the end).
      if (jsonWanted)
        (ioIn.stdout ?? process.stdout).write(
          `${JSON.stringify({
            ok: false,
            outcome: 'interrupted',
            error: { code: 'SOUP_INTERRUPTED', message, exit_code: EXIT_CODES.interrupted },
          })}\n`,
        );
      process.exit(EXIT_CODES.interrupted);
    }
    (ioIn.stderr ?? process.stderr).write(`\nsoup: ${sig}: stopping after the current step (again to quit now)\n`);
    // The reason names the signal: soup train reports it with the step it saved.
    controller.abort(new InterruptedError(`interrupted by ${sig}`, { signal: sig }));
  };
  if (ioIn.stdout === undefined) ignoreClosedPipe(process.stdout);
  if (ioIn.stderr === undefined) ignoreClosedPipe(process.stderr);
  // SIGHUP (the terminal or the notebook session went away) and SIGUSR1/2 (a scheduler's warning; SIGUSR1 would
  // otherwise open Node's debugger) end the session like SIGTERM.
  const owned = ioIn.signal === undefined ? SESSION_SIGNALS : [];
  for (const sig of owned) process.on(sig, onSignal);
  try {
    return await runMain(argv, ioIn.signal === undefined ? { ...ioIn, signal: controller.signal } : ioIn, jsonWanted);
  } finally {
    for (const sig of owned) process.off(sig, onSignal);
  }
}

async function runMain(argv: string[], io: CliIo, json: boolean): Promise<number> {
  const program = buildProgram(io);
  const stderr = io.stderr ?? process.stderr;
  const stdout = io.stdout ?? process.stdout;
  const said = soupLines(stderr);
  const fail = (code: number, errCode: string, lines: string[]): number => {
    for (const line of lines) said.write(`${line}\n`);
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
    stderr.write('\n');
    said.write(`${group.name()} needs a subcommand: ${subcommandNames(group).join(', ')}\n`);
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
      // Commander puts "(Did you mean …?)" on a second line: keep one line, in soup's lower case.
      const msg = err.message
        .replace(/^error:\s*/, '')
        .replace(/\n+/g, ' ')
        .replace(/\((Did) you mean|\. (Allowed) choices/g, (m) => m.toLowerCase())
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
    if ((io.env ?? process.env).SOUP_DEBUG === '1') said.write(`${e.stack ?? e.message}\n`);
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
