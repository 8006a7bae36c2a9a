import type { Options } from 'tsup';

/** The one build config every package's tsup.config.ts reuses: ESM + .d.ts, Node 20. */
export const baseConfig = {
  entry: ['src/index.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: false,
  treeshake: true,
} satisfies Options;
