/**
 * Child-process fixture for the store's crash and write-failure tests (run with `node --import tsx`).
 *   efbig <saveDir>        pack 1 MiB under the caller's `ulimit -f`, print a JSON report
 *   hold <saveDir> <n>     pack n tensors, print `HELD <json>`, then wait to be killed
 *   hold-anon <saveDir> <n>  the same with `anonymousFiles: true`
 *   churn <saveDir>        keep one tensor packed, pack/unpack steps forever, print `CHURNING <pid>` in the first
 */
import { readdirSync } from 'node:fs';
import { ActivationStore } from '../activation-store';

const [mode, saveDir, nArg] = process.argv.slice(2);
const cwd = process.cwd();

if (mode === 'efbig') {
  let errorCode: string | undefined;
  const store = new ActivationStore({
    target: 'disk',
    saveDir: saveDir!,
    cwd,
    onWriteError: (err) => (errorCode = (err as NodeJS.ErrnoException).code),
  });
  const data = new Float32Array(256 * 1024).map((_, i) => i);
  const handle = store.pack({ dtype: 'float32', dims: [data.length], data });
  const filesAfterPack = readdirSync(store.saveDir!);
  const back = store.unpack(handle).data as Float32Array;
  const roundTrip = back.length === data.length && back.every((v, i) => v === data[i]);
  const { writeFallbacks, filesWritten } = store.stats;
  store.close();
  console.log(
    JSON.stringify({ location: handle.location, writeFallbacks, filesWritten, errorCode, roundTrip, filesAfterPack }),
  );
} else if (mode === 'hold' || mode === 'hold-anon') {
  const store = new ActivationStore({ target: 'disk', saveDir: saveDir!, cwd, anonymousFiles: mode === 'hold-anon' });
  const n = Number(nArg ?? '3');
  for (let i = 0; i < n; i += 1) store.pack({ dtype: 'float32', dims: [1024], data: new Float32Array(1024).fill(i) });
  console.log(
    `HELD ${JSON.stringify({
      pid: process.pid,
      prefix: store.filePrefix,
      files: readdirSync(store.saveDir!).length,
      anonymous: store.usesAnonymousFiles,
    })}`,
  );
  setInterval(() => undefined, 1 << 30);
} else if (mode === 'churn') {
  const store = new ActivationStore({ target: 'disk', saveDir: saveDir!, cwd });
  const data = new Float32Array(16 * 1024).fill(1);
  // saved for the whole run, like an embedding's output: there is always a file to leave behind
  store.pack({ dtype: 'float32', dims: [data.length], data });
  let round = 0;
  const step = async (): Promise<void> => {
    // a "step": pack a few activations, then unpack them in reverse like a backward pass
    const handles = [];
    for (let i = 0; i < 6; i += 1) handles.push(await store.packAsync({ dtype: 'float32', dims: [data.length], data }));
    if (round === 0) console.log(`CHURNING ${process.pid}`);
    for (const h of handles.reverse()) await store.unpackAsync(h);
    round += 1;
    setImmediate(() => void step());
  };
  void step();
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
