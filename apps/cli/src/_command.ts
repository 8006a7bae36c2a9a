// How a command is declared and wired. Each command's flags live in `commands/<name>.options.ts`, a light
// module (commander and the shared option builders only), so `soup --help` builds the whole tree without
// loading any command's dependencies; index.ts imports the command's module only when it runs.
import type { Command } from 'commander';
import type { CommandContext } from './_context';

/** Every command has `--json`: the context prints its result as one JSON object. */
export interface JsonOption {
  json?: boolean;
}

/** A command's action: its parsed options, the context, its positional arguments; a number is the exit code. */
export type Run<O> = (opts: O, ctx: CommandContext, args: string[]) => Promise<number | void>;

/** A command's flags and help, and the type `O` its options parse to. */
export interface CommandSpec<O extends JsonOption> {
  /** Adds the command, with its options and help texts, under `parent`. */
  readonly define: (parent: Command) => Command;
  /** Never set: it carries `O`, so a spec cannot be wired to a run() that takes other options. */
  readonly options?: O;
}

/** Declares a command whose options parse to `O` (the parsers in `_parse.ts` return the types `O` names). */
export function commandSpec<O extends JsonOption>(define: (parent: Command) => Command): CommandSpec<O> {
  return { define };
}
