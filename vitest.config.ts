import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// One project per workspace package, named as in its package.json (`--project @soup/cli`), each
// inheriting the options below (`extends: true`; a folder glob would give each vitest's defaults).
const projects = ['packages', 'apps'].flatMap((group) =>
  readdirSync(group)
    .map((name) => join(group, name, 'package.json'))
    .filter((manifest) => existsSync(manifest))
    .map((manifest) => ({
      extends: true as const,
      test: { name: (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name, root: join(manifest, '..') },
    })),
);

export default defineConfig({
  test: {
    projects,
    // Real ONNX Runtime sessions and child processes on a shared 2-core machine: a test that
    // takes 2–4 s alone can take several times that while the suite runs beside other work.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
