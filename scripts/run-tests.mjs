// Runs every project's tests with vitest and ends with one line: "N passed, N failed[, N skipped]".
// The totals come from vitest's JSON reporter, so a run that executed no test cannot pass unnoticed.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const report = join(root, '.vitest-report.json');
rmSync(report, { force: true });
const args = [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
];
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
} catch (err) {
  console.error(`could not read the vitest JSON report (${report}): ${err.message}`);
  failed = Math.max(failed, 1);
}
const code = run.status ?? 1;
if (passed === 0) console.error('no test passed: treating the run as failed');
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code !== 0 || failed > 0 || passed === 0 ? code || 1 : 0);
