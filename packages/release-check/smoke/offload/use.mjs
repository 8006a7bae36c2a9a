import { mkdirSync, readdirSync } from 'node:fs';
import { ActivationStore, validateOffloadConfig, withOffload } from '@soup/offload';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
check(
  validateOffloadConfig({ target: 'disk', backend: 'onnxruntime', device: 'cpu', saveDir: null }).length === 1,
  'disk without a save dir must be refused',
);
mkdirSync('scratch', { recursive: true });
const data = Float32Array.from({ length: 1024 }, (_, i) => i * 0.5);
await withOffload('disk', 'scratch', async () => {
  const store = new ActivationStore({ target: 'disk', saveDir: 'scratch' });
  const handle = store.pack({ dtype: 'float32', dims: [32, 32], data });
  check(handle.location === 'disk' && readdirSync('scratch').length === 1, 'the tensor must be in a scratch file');
  const back = store.unpack(handle);
  check(
    Buffer.compare(
      Buffer.from(back.data.buffer, back.data.byteOffset, back.data.byteLength),
      Buffer.from(data.buffer),
    ) === 0,
    'round trip',
  );
  store.close();
});
check(readdirSync('scratch').length === 0, 'scratch files left behind');
console.log('SMOKE OK');
