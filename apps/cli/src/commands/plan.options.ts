// `soup plan`'s flags (loaded for every `soup` run: keep this file to commander and the option builders).
import { commandSpec } from '../_command';
import { budgetOption, configOption, noCacheOption, noPredictOption, type SearchOptions } from '../_options';
import { type DeviceSpec, deviceArg } from '../_parse';

export interface PlanOptions extends SearchOptions {
  /** @default 'soup.yaml' */
  config: string;
  device?: DeviceSpec;
  json?: boolean;
}

export const planCommand = commandSpec<PlanOptions>((program) => {
  const plan = configOption(
    program
      .command('plan')
      .description(
        'show what soup train would do on this device: batch size, checkpointing tier, offload, peak vs budget',
      ),
  ).option('--device <device>', "override the config's device", deviceArg);
  return noPredictOption(
    noCacheOption(budgetOption(plan, 'training.memory_budget of the config, else what the device has free')),
  ).option('--json', 'print the plan as JSON');
});
