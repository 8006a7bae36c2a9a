// Installed alone: a soup.yaml's tier and model, then the micro-batch search over a fake probe (no cache),
// its events collected (the package prints nothing).
import { validateConfig } from '@soup/config';
import { gptSpecOf, noFitAdvice, resolveBatch, resolveTier } from '@soup/plan';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const text =
  'base: soup/tiny-gpt\ndata:\n  train: data/train.txt\n  max_length: 64\ntraining:\n  steps: 10\n' +
  '  batch_size: 24\n  gradient_checkpointing: full\n';
const { config, errors } = validateConfig({ text, file: '/proj/soup.yaml' });
check(config !== null, `config: ${JSON.stringify(errors)}`);
check(gptSpecOf(config).nLayers === config.model.nLayers, 'gptSpecOf');
check(resolveTier(config, null).granularity === 'full', 'resolveTier');
const events = [];
const r = await resolveBatch({
  env: {},
  cwd: process.cwd(),
  signal: new AbortController().signal,
  onEvent: (e) => events.push(e.type),
  probe: async (batchSize) => {
    const fits = batchSize <= 8;
    return { fits, batchSize, reason: fits ? 'fit' : 'oom', measurement: 'sampled-rss', detail: '', ms: 1 };
  },
  key: { base: 'smoke', maxLength: 64, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 1 },
  globalBatchSize: 24,
  start: 24,
  noCache: true,
});
check(r.batchSize === 8, `micro-batch: ${r.batchSize}`);
check(events[0] === 'start' && events.at(-1) === 'done' && events.includes('trial'), `events: ${events}`);
check(
  /max_length/.test(noFitAdvice({ mode: 'exec', device: 'cpu', budgetBytes: null, budgetFrom: null, maxLength: 64 })),
  'advice',
);
console.log('SMOKE OK');
