import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** Builds the `soup` program: one lazily imported module per command. */
export function buildProgram(): Command {
  const program = new Command('soup')
    .description('soup makes a training run fit its device and survive the end of its session.')
    .version(pkg.version, '-v, --version', 'print the version')
    .showHelpAfterError('(run soup --help for usage)');
  return program;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram().exitOverride();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    process.stderr.write(`soup: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
