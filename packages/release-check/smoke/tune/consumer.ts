import { chooseConfiguration, type ConfigurationChoice, type MeasuredCandidate } from '@soup/tune';

const candidates: MeasuredCandidate[] = [
  { label: 'a', microBatchSize: 4, accumulation: 8, peakBytes: 100, stepMs: 100, noiseMs: 1 },
  { label: 'b', microBatchSize: 8, accumulation: 4, peakBytes: 200, stepMs: 150, noiseMs: 1 },
];
const choice: ConfigurationChoice = chooseConfiguration(candidates, 32);
export const chosen: number | null = choice.chosen;
// @ts-expect-error globalBatchSize is required
chooseConfiguration(candidates);
