// Runs the linter, then every project's tests with vitest, and ends with one line: "N passed, N failed[, N skipped]".
// The totals come from vitest's JSON reporter, so a run that executed no test cannot pass unnoticed. A failed lint
// counts as one failure (its own line says so), so the closing line never reads green over a red lint.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const report = join(root, '.vitest-report.json');
const vitestArgs = process.argv.slice(2);

// A run narrowed to some files or projects (`npm test -- src/x.test.ts`) skips the lint: it is about those tests.
let lintFailed = false;
if (vitestArgs.length === 0) {
  const lint = spawnSync('npm', ['run', '--silent', 'lint'], { cwd: root, stdio: 'inherit' });
  lintFailed = lint.status !== 0;
  console.log(lintFailed ? 'lint: FAILED (biome check, line lengths): counted as 1 failed' : 'lint: passed');
}

rmSync(report, { force: true });
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...vitestArgs];
const run = spawnSync('npx', args, { cwd: root, stdio: 'inherit' });

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed = json.numPassedTests ?? 0;
  failed = json.numFailedTests ?? 0;
  skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
  if ((json.numFailedTestSuites ?? 0) > 0 && failed === 0) failed = json.numFailedTestSuites;
  printSlowest(json.testResults ?? []);
} catch (err) {
  console.error(`could not read the vitest JSON report (${report}): ${err.message}`);
  failed = Math.max(failed, 1);
}
if (lintFailed) failed += 1;
const code = run.status ?? 1;
if (passed === 0) console.error('no test passed: treating the run as failed');
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code !== 0 || failed > 0 || passed === 0 ? code || 1 : 0);

/** The ten files that took longest (their own wall time, start to end), so a slow loop names its cause. */
function printSlowest(files) {
  const rows = files
    .filter((f) => typeof f.startTime === 'number' && typeof f.endTime === 'number')
    .map((f) => ({ ms: f.endTime - f.startTime, name: relative(root, f.name) }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10);
  if (rows.length === 0) return;
  console.log('\nslowest test files:');
  for (const r of rows) console.log(`${(r.ms / 1000).toFixed(1).padStart(8)} s  ${r.name}`);
}
