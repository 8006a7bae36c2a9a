import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// Test files whose verdicts rest on timing: the tuner's choice against a grid it measures, its walk to a smaller
// micro-batch, a warm-up told by its slope, a checkpoint judged complete once it settles, a push raced by a kill,
// a span of a child's output, an address-space cap sized by measuring alone (its thread count follows the load).
// They run alone, after every other file, so no other test's load lands on one side of a comparison or stalls a
// writer past its settle window. A file that is only slow does not belong here: this lane runs on one core while
// the other idles.
// hub-ckpt's transfer-memory test runs with the rest: its verdict is the child's VmHWM (the kernel's own
// peak, not a sample) above its baseline, which load does not change, only delays.
const ALONE: Record<string, string[]> = {
  '@soup/cli': [
    'src/train-tune.test.ts',
    'src/train-tune-offload.test.ts',
    'src/probe-try.test.ts',
    'src/run.rules.test.ts',
    'src/run.faults.test.ts',
    'src/train-micro.e2e.test.ts',
  ],
  '@soup/cuda-probe': ['src/create-command-probe.test.ts'],
  '@soup/plan': ['src/trainer-tune.walk.test.ts'],
  '@soup/tune': ['src/tune-exec.warm-up.test.ts'],
};

// Most test files wait on child processes, sessions that settle and servers that answer, not on the CPU:
// three at a time keep a 2-core machine busy (vitest's default here would be one, cores − 1).
const PARALLEL_WORKERS = Number(process.env.SOUP_TEST_WORKERS ?? 3);

// One project per workspace package, named as in its package.json (`--project @soup/cli`), each
// inheriting the options below (`extends: true`; a folder glob would give each vitest's defaults).
// A package with files in ALONE gets a second project, `<name> (alone)`, that runs them one at a time.
// Paths from this file's folder, so `npx vitest` works from any folder of the repository.
const projects = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(import.meta.dirname, group))
    .map((name) => join(import.meta.dirname, group, name, 'package.json'))
    .filter((manifest) => existsSync(manifest))
    .flatMap((manifest) => {
      const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name;
      const root = join(manifest, '..');
      const alone = ALONE[name] ?? [];
      const shared = {
        extends: true as const,
        test: {
          name,
          root,
          exclude: [...configDefaults.exclude, ...alone],
          maxWorkers: PARALLEL_WORKERS,
          sequence: { groupOrder: 0 },
        },
      };
      if (alone.length === 0) return [shared];
      const single = {
        extends: true as const,
        test: { name: `${name} (alone)`, root, include: alone, maxWorkers: 1, sequence: { groupOrder: 1 } },
      };
      return [shared, single];
    }),
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
