// Fails when a tracked source line is longer than 120 characters: Biome's formatter wraps code at 120
// but leaves long strings, comments and regular expressions as they are.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAX = 120;
const root = join(import.meta.dirname, '..');
const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '*.ts', '*.mts', '*.mjs', '*.js'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter(Boolean);
const long = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(join(root, file), 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  text.split('\n').forEach((line, i) => {
    if ([...line].length > MAX) long.push(`${file}:${i + 1}: ${[...line].length} characters`);
  });
}
for (const l of long.slice(0, 50)) console.error(l);
if (long.length > 50) console.error(`… and ${long.length - 50} more`);
if (long.length > 0) {
  console.error(
    `${long.length} line(s) over ${MAX} characters: wrap them (split a long string with +, a comment over lines)`,
  );
  process.exit(1);
}
