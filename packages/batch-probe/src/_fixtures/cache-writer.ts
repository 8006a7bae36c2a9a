// Child process for the concurrency test: waits for a "go" file, then saves `count` entries
// (keys made with makeCacheKey, one per write) through saveCacheEntry, and prints a JSON summary.
// Usage: node --import tsx cache-writer.ts <writerIndex> <count> <goFile>
import { existsSync } from 'node:fs';
import { makeCacheKey } from '../make-cache-key';
import { saveCacheEntry } from '../save-cache-entry';

const [index, count, goFile] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]!];
process.stdout.write('ready\n');
while (!existsSync(goFile)) await new Promise((r) => setTimeout(r, 2));

let saved = 0;
const errors: string[] = [];
for (let j = 0; j < count; j++) {
  const key = makeCacheKey({
    base: `writer-${index}`,
    maxLength: 128,
    quantization: 'none',
    loraR: 0,
    gpuName: 'cpu',
    gpuMemoryGb: j,
  });
  const r = await saveCacheEntry({ key, batchSize: index * 1000 + j + 1 });
  if (r.saved) saved += 1;
  else errors.push(r.error.message);
}
process.stdout.write(`${JSON.stringify({ index, saved, errors })}\n`);
process.exitCode = saved === count ? 0 : 1;
