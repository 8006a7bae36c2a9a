import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Test files whose verdicts rest on timing: the tuner's choice against a grid it measures, its walk to a smaller
// micro-batch, a warm-up told by its slope, a checkpoint judged complete once it settles, a push raced by a kill,
// a span of a child's output, an address-space cap sized by measuring alone (its thread count follows the load).
// They run after every other file, so no other test's load lands on one side of a comparison or stalls a writer
// past its settle window. A file that is only slow does not belong here. Each list is longest first.
// PAIRS: their trainers' steps are sleeps (the known-cost trainer, a settle window's writer), so what load moves is
// the start-up, which the runs' slopes cancel: two at a time (one at a time, they kept 0.6 of 2 cores busy).
const PAIRS = [
  'apps/cli/src/probe-try.torch.test.ts',
  'apps/cli/src/run.rules.test.ts',
  'apps/cli/src/probe-try.test.ts',
  'apps/cli/src/run.faults.test.ts',
  'packages/cuda-probe/src/create-command-probe.test.ts',
  'packages/tune/src/tune-exec.warm-up.test.ts',
  'packages/plan/src/trainer-tune.walk.test.ts',
];
// ALONE: their timed steps are computed (soup's ONNX step on one thread), or a cap is sized by measuring: one at
// a time, last, on a machine doing nothing else.
const ALONE = [
  'apps/cli/src/train-tune.test.ts',
  'apps/cli/src/train-tune-offload.test.ts',
  'apps/cli/src/train-micro.e2e.test.ts',
];
// The other files' longest (fourteen npm installs, about 115 s beside the rest) starts first: last in vitest's
// order (by project name), it ran on while the lane's other two workers idled.
const FIRST = ['packages/release-check/src/pack-install.test.ts'];
// hub-ckpt's transfer-memory test runs with the rest: its verdict is the child's VmHWM (the kernel's own
// peak, not a sample) above its baseline, which load does not change, only delays.
const LANES = [
  { suffix: 'pairs', files: PAIRS, workers: 2, groupOrder: 1 },
  { suffix: 'alone', files: ALONE, workers: 1, groupOrder: 2 },
];

// Most test files wait on child processes, sessions that settle and servers that answer, not on the CPU:
// three at a time keep a 2-core machine busy (vitest's default here would be one, cores − 1).
const PARALLEL_WORKERS = Number(process.env.SOUP_TEST_WORKERS ?? 3);

// One project per workspace package, named as in its package.json (`--project @soup/cli`), each
// inheriting the options below (`extends: true`; a folder glob would give each vitest's defaults).
// A package with files in a lane gets a project for it, `<name> (pairs)` / `<name> (alone)`.
// Paths from this file's folder, so `npx vitest` works from any folder of the repository.
const projects = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(import.meta.dirname, group))
    .map((name) => join(import.meta.dirname, group, name, 'package.json'))
    .filter((manifest) => existsSync(manifest))
    .flatMap((manifest) => {
      const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name;
      const root = join(manifest, '..');
      const mine = (files: string[]): string[] =>
        files.map((f) => relative(root, join(import.meta.dirname, f))).filter((f) => !f.startsWith('..'));
      const laned = LANES.flatMap((lane) => mine(lane.files));
      const shared = {
        extends: true as const,
        test: {
          name,
          root,
          exclude: [...configDefaults.exclude, ...laned],
          maxWorkers: PARALLEL_WORKERS,
          sequence: { groupOrder: 0 },
        },
      };
      const lanes = LANES.filter((lane) => mine(lane.files).length > 0).map((lane) => ({
        extends: true as const,
        test: {
          name: `${name} (${lane.suffix})`,
          root,
          include: mine(lane.files),
          maxWorkers: lane.workers,
          sequence: { groupOrder: lane.groupOrder },
        },
      }));
      return [shared, ...lanes];
    }),
);

/** vitest's order (by project, then unknown or larger files first), except FIRST first and each lane as listed. */
class LaneOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const listed = [...FIRST, ...LANES.flatMap((lane) => lane.files)];
    const rank = (spec: TestSpecification): number => {
      const i = listed.indexOf(relative(import.meta.dirname, spec.moduleId));
      return i < 0 ? FIRST.length : i;
    };
    const order = (spec: TestSpecification): number => spec.project.config.sequence.groupOrder;
    return (await super.sort(files)).sort((a, b) => order(a) - order(b) || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    projects,
    sequence: { sequencer: LaneOrder },
    // Real ONNX Runtime sessions and child processes on a shared 2-core machine: a test that
    // takes 2–4 s alone can take several times that while the suite runs beside other work.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
