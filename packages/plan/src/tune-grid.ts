// @soup/tune's exhaustive grid over soup.yaml's model, for the train-tune test and the bench.
import type { GptSpec } from '@soup/onnx-train';
import { type GridModel, type GridPoint, headToHead as h2h, measureTrainGrid as grid } from '@soup/tune';
import type { SoupConfig } from '@soup/config';
import { recomputeOf } from './config-plan';

export { gridBest, type GridPoint } from '@soup/tune';

const modelOf = (config: SoupConfig, spec: GptSpec): GridModel => ({
  spec,
  globalBatchSize: config.training.batchSize,
  threads: config.training.threads,
  recomputeOf: (g) => recomputeOf(config, g),
});

/** @soup/tune's measureTrainGrid over soup.yaml's model and threads. */
export const measureTrainGrid = (o: {
  config: SoupConfig;
  spec: GptSpec;
  budgetBytes: number;
  steps: number;
  cwd: string;
  env: NodeJS.ProcessEnv;
}): Promise<GridPoint[]> => grid({ ...modelOf(o.config, o.spec), ...o });

/** @soup/tune's headToHead over soup.yaml's model and threads. */
export const headToHead = (
  o: { config: SoupConfig; spec: GptSpec; steps: number; rounds: number; cwd: string },
  a: { tier: string; m: number },
  b: { tier: string; m: number },
): Promise<[number, number]> => h2h({ ...modelOf(o.config, o.spec), ...o }, a, b);
