import { defineConfig } from 'tsup';
import { baseConfig } from '../../tsup.base';

// splitting: each lazily imported command stays its own chunk, so `soup --help` loads none of them.
export default defineConfig({ ...baseConfig, splitting: true });
