import { defineConfig } from 'tsup';
import { baseConfig } from '../../tsup.base';

// dist/signals.js is a second entry: the CLI judges session-ending signals through it from its first line without
// loading the supervisor and the Hub client (`soup --help` loads no command's packages).
export default defineConfig({ ...baseConfig, entry: { index: 'src/index.ts', signals: 'src/signal-judge.ts' } });
