import { describe, expect, it } from 'vitest';
import { noFitAdvice } from './no-fit-advice';

const GiB = 1024 ** 3;

describe('noFitAdvice: one "nothing fits" line for every command, right for the device and the budget', () => {
  it('on a CPU it never suggests offloading to host RAM (that is the memory that ran out)', () => {
    const cpu = noFitAdvice({
      mode: 'config',
      device: 'cpu',
      granularity: null,
      offloadTarget: null,
      budgetBytes: null,
      budgetFrom: null,
      maxLength: 128,
    });
    expect(cpu).not.toMatch(/activation_offloading: cpu/);
    expect(cpu).toContain('training.activation_offloading: disk');
    const cpuOffloaded = noFitAdvice({
      mode: 'config',
      device: 'cpu',
      granularity: 'full',
      offloadTarget: 'cpu',
      budgetBytes: null,
      budgetFrom: null,
      maxLength: 128,
    });
    expect(cpuOffloaded).toContain('scratch files instead of RAM (training.activation_offloading: disk)');
    const gpu = noFitAdvice({
      mode: 'config',
      device: 'cuda',
      granularity: null,
      offloadTarget: null,
      budgetBytes: null,
      budgetFrom: null,
      maxLength: 128,
    });
    expect(gpu).toContain('training.activation_offloading: cpu or disk');
  });

  it("names where the budget came from: soup.yaml's training.memory_budget, or --budget", () => {
    const fromConfig = noFitAdvice({
      mode: 'config',
      device: 'cpu',
      granularity: 'full',
      offloadTarget: 'disk',
      budgetBytes: 2 * GiB,
      budgetFrom: 'config',
      maxLength: 64,
    });
    expect(fromConfig).toBe(
      'What soup can change here: a shorter data.max_length (now 64) or a bigger training.memory_budget in ' +
        'soup.yaml (now 2.00 GiB).',
    );
    expect(fromConfig).not.toContain('--budget');
    const fromFlag = noFitAdvice({
      mode: 'model',
      device: 'cuda',
      budgetBytes: 2 * GiB,
      budgetFrom: 'flag',
      maxLength: 64,
    });
    expect(fromFlag).toBe(
      'What soup can change here: a shorter --max-length (now 64) or a bigger --budget than 2.00 GiB.',
    );
    expect(noFitAdvice({ mode: 'exec', device: 'cpu', budgetBytes: null, budgetFrom: null, maxLength: 64 })).toMatch(
      /^soup runs your trainer as it is, so here it can only measure it;/,
    );
  });
});
