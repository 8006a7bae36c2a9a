import { defineConfig } from 'tsup';
import { baseConfig } from '../../tsup.base';

// dist/worker.js is the probe child: a second entry, shipped next to index.js (no types).
export default defineConfig({
  ...baseConfig,
  entry: { index: 'src/index.ts', worker: 'src/_worker.ts' },
  dts: { entry: { index: 'src/index.ts' } },
});
