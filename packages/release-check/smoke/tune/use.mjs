// Installed alone: a choice between two measured configurations, then a tune-cache round trip in a temp dir.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { chooseConfiguration, lookupTuneEntry, makeTuneKey, saveTuneEntry } from '@soup/tune';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const rows = [
  {
    label: 'ckpt=false',
    values: { ckpt: 'false' },
    microBatchSize: 4,
    accumulation: 8,
    peakBytes: 100,
    stepMs: 100,
    noiseMs: 1,
    samplesPerSecond: 40,
    note: null,
  },
  {
    label: 'ckpt=true',
    values: { ckpt: 'true' },
    microBatchSize: 8,
    accumulation: 4,
    peakBytes: 90,
    stepMs: 150,
    noiseMs: 1,
    samplesPerSecond: 53.3,
    note: null,
  },
];
const choice = chooseConfiguration(rows, 32);
check(choice.chosen === 1, `choice: ${JSON.stringify(choice)}`);
const dir = mkdtempSync(`${tmpdir()}/soup-smoke-`);
try {
  const location = { env: {}, homeDir: dir, cwd: dir };
  const key = makeTuneKey({
    command: 'train {ckpt}',
    tries: { ckpt: ['false', 'true'] },
    globalBatchSize: 32,
    worldSize: 1,
    budgetBytes: null,
    gpuName: 'cpu',
    gpuMemoryGb: 0,
  });
  await saveTuneEntry(
    key,
    {
      chosen: 1,
      reason: choice.reason,
      rows,
      globalBatchSize: 32,
      worldSize: 1,
      timeSteps: 8,
      budgetBytes: null,
      gpuName: 'cpu',
      gpuMemoryGb: 0,
      command: 'train {ckpt}',
      savedAt: new Date().toISOString(),
    },
    location,
  );
  check(lookupTuneEntry(key, location)?.chosen === 1, 'tune cache round trip');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log('SMOKE OK');
