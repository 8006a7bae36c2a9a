// A small soup.yaml for the tests of soup train's session (12 steps, G = 8, 16 tokens, output `out`).
import { validateConfig, type SoupConfig } from '@soup/config';

/** The config, with `extra` lines added under `training:` (e.g. `  schedule_steps: 10\n`). */
export function trainTestConfig(extra = ''): SoupConfig {
  const text = `base: soup/tiny-gpt
data:
  train: data/train.txt
  max_length: 16
training:
  steps: 12
  batch_size: 8
${extra}output: out
hub:
  keep_local: 0
`;
  const { config } = validateConfig({ text, file: '/proj/soup.yaml' });
  if (!config) throw new Error('expected a valid config');
  return config;
}
