import { defineConfig } from 'tsup';
import { baseConfig } from '../../tsup.base';

// dist/proc-stat.js is a second entry: @soup/cuda-probe reads /proc/<pid>/stat through it without loading the
// Hub client.
export default defineConfig({ ...baseConfig, entry: { index: 'src/index.ts', 'proc-stat': 'src/proc-stat.ts' } });
