import { defineConfig } from 'tsup';
import { baseConfig } from '../../tsup.base';

// splitting: each lazily imported command stays its own chunk, so `soup --help` loads none of them.
// train-child: soup train's trainer, a process of its own that the supervisor launches.
export default defineConfig({ ...baseConfig, entry: ['src/index.ts', 'src/train-child.ts'], splitting: true });
