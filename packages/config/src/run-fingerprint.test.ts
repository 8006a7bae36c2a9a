import { describe, expect, it } from 'vitest';
import { runFingerprint } from './run-fingerprint';
import { validateConfig, type SoupConfig } from './validate-config';

const text = `base: soup/tiny-gpt
data: {train: t.txt, max_length: 32}
training: {steps: 60, batch_size: 4}
`;
function config(edit: (c: SoupConfig) => void = () => {}): SoupConfig {
  const c = validateConfig({ text, file: '/p/soup.yaml' }).config!;
  edit(c);
  return c;
}
const fp = (c: SoupConfig, train = 'a'.repeat(64)) =>
  runFingerprint({ config: c, trainSha256: train, valSha256: null }).run;

describe('runFingerprint', () => {
  it('is stable and shaped soup-<20 hex>', () => {
    expect(fp(config())).toBe(fp(config()));
    expect(fp(config())).toMatch(/^soup-[0-9a-f]{20}$/);
  });
  it('changes with the horizon, the data, the batch size and the optimizer', () => {
    const base = fp(config());
    expect(fp(config((c) => (c.training.steps = 80)))).not.toBe(base);
    expect(fp(config(), 'b'.repeat(64))).not.toBe(base);
    expect(fp(config((c) => (c.training.batchSize = 8)))).not.toBe(base);
    expect(fp(config((c) => (c.training.lr = 0.001)))).not.toBe(base);
    expect(fp(config((c) => (c.data.maxLength = 64)))).not.toBe(base);
  });
  it('ignores memory levers, device and cadence', () => {
    const base = fp(config());
    expect(fp(config((c) => (c.training.gradientCheckpointing = 'full')))).toBe(base);
    expect(fp(config((c) => (c.training.threads = 1)))).toBe(base);
    expect(fp(config((c) => (c.hub.pushEverySteps = 7)))).toBe(base);
    expect(fp(config((c) => (c.device = { kind: 'cuda', id: 0, spec: 'cuda' })))).toBe(base);
  });
  it('holds the global batch G, not the micro-batch m (nor how m is found, nor the headroom)', () => {
    const base = fp(config());
    expect(fp(config((c) => (c.training.microBatchSize = 2)))).toBe(base);
    expect(fp(config((c) => (c.training.microBatchSize = 4)))).toBe(base);
    expect(fp(config((c) => (c.training.staticBatchSize = 1)))).toBe(base);
    expect(fp(config((c) => (c.training.autoBatchSizeStrategy = 'static')))).toBe(base);
    expect(fp(config((c) => (c.training.memoryHeadroom = 0.1)))).toBe(base);
    expect(
      runFingerprint({ config: config(), trainSha256: 'a'.repeat(64), valSha256: null }).identity[
        'training.batch_size'
      ],
    ).toBe(4);
  });
});
