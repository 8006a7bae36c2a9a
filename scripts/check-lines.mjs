// Fails when a tracked source line is longer than 120 characters. Biome's formatter wraps code at 120 but
// leaves strings, comments and regular expressions as they are, so those are checked here. Two kinds of text
// are left as written, since wrapping would change what they are: the inside of a template literal that spans
// lines (a program or a file a test writes, kept verbatim) and a regular-expression literal (a line a test expects).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const MAX = 120;
const root = join(import.meta.dirname, '..');
const ts = createRequire(join(root, 'package.json'))('typescript');
const files = execFileSync(
  'git',
  ['ls-files', '-co', '--exclude-standard', '*.ts', '*.mts', '*.mjs', '*.js', '*.cjs'],
  {
    cwd: root,
    encoding: 'utf8',
  },
)
  .split('\n')
  .filter(Boolean);

/** Whether the text at `pos` is verbatim: inside a multi-line template literal or a regular-expression literal. */
function verbatimAt(sf, pos) {
  let verbatim = false;
  const visit = (node) => {
    if (pos < node.getStart(sf) || pos >= node.getEnd()) return;
    const multiLine = (n) => n.getText(sf).includes('\n');
    if (ts.isRegularExpressionLiteral(node)) verbatim = true;
    if ((ts.isTemplateExpression(node) || ts.isNoSubstitutionTemplateLiteral(node)) && multiLine(node)) verbatim = true;
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return verbatim;
}

const long = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(join(root, file), 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  const lines = text.split('\n');
  if (!lines.some((l) => [...l].length > MAX)) continue;
  const kind = file.endsWith('.ts') || file.endsWith('.mts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  let offset = 0;
  lines.forEach((line, i) => {
    const chars = [...line];
    if (chars.length > MAX) {
      // The first column past the limit, or the last one before trailing punctuation (`/…/,` and `);`).
      const body = line.replace(/[\s,;)\]}]+$/, '');
      const col = Math.min(MAX, [...body].length - 1);
      const at = offset + chars.slice(0, col).join('').length;
      if (!verbatimAt(sf, at)) long.push(`${file}:${i + 1}: ${chars.length} characters`);
    }
    offset += line.length + 1;
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
