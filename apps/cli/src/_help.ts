// Help and usage-error details shared by every command: required options marked and reported together.
import type { Command, Option } from 'commander';

function walk(cmd: Command, fn: (c: Command) => void): void {
  fn(cmd);
  for (const sub of cmd.commands) walk(sub, fn);
}

/** The required options of `cmd` that the command line left unset. */
export function missingRequiredOptions(cmd: Command): Option[] {
  return cmd.options.filter((o) => o.mandatory && cmd.getOptionValue(o.attributeName()) === undefined);
}

/**
 * On `program` and every subcommand: appends "(required)" to the help of each required option,
 * and reports every missing required option in one error instead of the first only.
 */
export function markRequiredOptions(program: Command): void {
  walk(program, (cmd) => {
    for (const o of cmd.options)
      if (o.mandatory && !o.description.endsWith('(required)')) o.description = `${o.description} (required)`;
    // Commander's (private) hook reports the first missing option; report them all, once.
    (cmd as unknown as { missingMandatoryOptionValue: (this: Command) => void }).missingMandatoryOptionValue =
      function (this: Command): void {
        const missing = missingRequiredOptions(this);
        const list = missing.map((o) => `'${o.flags}'`).join(', ');
        this.error(`error: required option${missing.length === 1 ? '' : 's'} ${list} not specified`, {
          code: 'commander.missingMandatoryOptionValue',
        });
      };
  });
}

/** Names of the subcommands of `cmd` (help excluded). */
export function subcommandNames(cmd: Command): string[] {
  return cmd.commands.map((c) => c.name()).filter((n) => n !== 'help');
}
