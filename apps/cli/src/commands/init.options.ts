// `soup init`'s flags (loaded for every `soup` run: keep this file to commander and the option builders).
import { Option } from 'commander';
import { commandSpec } from '../_command';
import { configOption } from '../_options';

export interface InitOptions {
  /** @default 'tiny' */
  template: 'tiny' | 'small';
  /** The soup.yaml to write. @default 'soup.yaml' */
  config: string;
  force?: boolean;
  json?: boolean;
}

export const initCommand = commandSpec<InitOptions>((program) => {
  const init = program
    .command('init')
    .description('write a commented soup.yaml (and its training text) to start from')
    .addOption(
      new Option('-t, --template <name>', 'tiny (trains in seconds on a laptop CPU) or small (minutes)')
        .choices(['tiny', 'small'])
        .default('tiny'),
    );
  return configOption(init, { initAlias: true })
    .option('-f, --force', 'overwrite an existing config (training text in data/ is never overwritten)')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', '\nExample:\n  soup init --template tiny && soup train');
});
