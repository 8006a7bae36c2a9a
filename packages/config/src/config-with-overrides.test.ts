import { describe, expect, it } from 'vitest';
import { configWithOverrides } from './config-with-overrides';
import { parseDevice } from './parse-device';
import { validateConfig } from './validate-config';

const text = 'base: soup/tiny-gpt\ndata:\n  train: data/train.txt\n  max_length: 64\ntraining:\n  steps: 10\n';

function configOf(extra = ''): NonNullable<ReturnType<typeof validateConfig>['config']> {
  const { config, errors } = validateConfig({ text: `${text}${extra}`, file: '/proj/soup.yaml', cwd: '/proj' });
  if (config === null) throw new Error(JSON.stringify(errors));
  return config;
}

describe('configWithOverrides', () => {
  it('a flag replaces its field in a copy; the loaded config is left as it was', () => {
    const loaded = configOf();
    const cuda = parseDevice('cuda:1')!;
    const { config } = configWithOverrides(loaded, { steps: 40, outputDir: 'runs/a', device: cuda, cwd: '/work' });
    expect(config).toMatchObject({ output: '/work/runs/a', device: cuda, training: { steps: 40 } });
    expect(loaded.training.steps).toBe(10);
    expect(loaded.device.spec).toBe('cpu');
    expect(configWithOverrides(loaded, { cwd: '/work' }).config).toEqual(loaded);
  });

  it('says where the memory budget comes from: the flag, else the config, else nowhere', () => {
    const none = configWithOverrides(configOf(), { cwd: '/' });
    expect(none.budgetFrom).toBeNull();
    expect(none.config.training.memoryBudgetBytes).toBeNull();
    const fromConfig = configWithOverrides(configOf('  memory_budget: 6GiB\n'), { cwd: '/' });
    expect(fromConfig).toMatchObject({
      budgetFrom: 'config',
      config: { training: { memoryBudgetBytes: 6 * 2 ** 30 } },
    });
    const fromFlag = configWithOverrides(configOf('  memory_budget: 6GiB\n'), { budgetBytes: 2 ** 30, cwd: '/' });
    expect(fromFlag).toMatchObject({ budgetFrom: 'flag', config: { training: { memoryBudgetBytes: 2 ** 30 } } });
  });
});
