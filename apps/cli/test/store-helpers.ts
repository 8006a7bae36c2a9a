// Test-only helpers shared by the store e2e tests (train-store, store-safety): one tiny soup.yaml and the
// real bin run against a local Hub-protocol test server.
import { runNode, type ChildResult, type HubServer } from '@soup/test-utils';
import { join } from 'node:path';
import { assetPath } from '../src/_assets';
import { SOUP_BIN } from './run-helpers';

/** A tiny soup.yaml: 12 steps of batch 4 × 16 tokens on one thread; `extra` is appended YAML. */
export function storeTestConfig(extra = ''): string {
  return `base: soup/e2e-gpt
model: {vocab_size: 256, d_model: 32, n_heads: 2, n_layers: 2, d_ff: 64}
data:
  train: ${assetPath('corpus/train.txt')}
  max_length: 16
training:
  steps: 12
  batch_size: 4
  micro_batch_size: 4
  lr: 0.01
  warmup_steps: 2
  threads: 1
${extra}`;
}

/** Runs `soup <args>` in `cwd` with the test server's token and endpoint, a home and batch cache of its own. */
export function soupWithHub(
  server: HubServer,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 120_000,
): Promise<ChildResult> {
  return runNode([SOUP_BIN, ...args], {
    cwd,
    timeoutMs,
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      NO_COLOR: '1',
      HF_TOKEN: server.token,
      HF_ENDPOINT: server.url,
      SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
      ...env,
    },
  });
}
