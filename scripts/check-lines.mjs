// Fails when a tracked source line is longer than 120 characters. Biome's formatter wraps code at 120 but
// leaves strings, comments and regular expressions as they are, so those are checked here. Two kinds of text
// are left as written, since wrapping would change what they are: the inside of a template literal that spans
// lines (a program or a file a test writes, kept verbatim) and a regular-expression literal (a line a test expects).
//
// Also fails on size, for non-test sources (*.ts, *.mts, *.mjs; not *.test.ts, not under node_modules or dist):
// - a file over 400 lines: split it by concern into small named modules;
// - a function (declaration, method, accessor, constructor, or an arrow/function expression bound to a name)
//   spanning over 150 lines, unless a comment line starting with `// Over 150 lines:` sits immediately above it
//   or on the first line of its body, giving the one-line reason it stays whole
//   (`// Over 150 lines: one search whose phases share its trials and bounds.`).
// SIZE_ALLOW lists files whose size problems (file or function) are known and being fixed elsewhere: they are
// not reported. An entry with no size problem left fails, so the list only shrinks.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const MAX = 120;
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 150;
const LONG_MARKER = '// Over 150 lines:';
// Empty: every tracked source file is within the limits.
const SIZE_ALLOW = new Set([]);
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

/** How TypeScript should parse `file`. */
function scriptKind(file) {
  return file.endsWith('.ts') || file.endsWith('.mts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
}

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

/** Whether a file is a non-test source that the size limits apply to. */
function sized(file) {
  if (!/\.(ts|mts|mjs)$/.test(file) || /\.test\.ts$/.test(file)) return false;
  return !file.split('/').some((part) => part === 'node_modules' || part === 'dist');
}

/** The name a function is known by, or undefined for an anonymous one (a callback passed inline). */
function functionName(sf, node) {
  const named = (n) => (n?.name ? n.name.getText(sf) : undefined);
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isGetAccessor(node)) return named(node);
  if (ts.isSetAccessor(node)) return named(node);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    const p = node.parent;
    if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) return named(p);
    if (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) return p.left.getText(sf);
    return named(node);
  }
  return undefined;
}

/**
 * Whether a LONG_MARKER comment sits on the line above the function (above its whole declaration when that starts on
 * the same line: `export const f = () => {`) or on the first line of its body.
 */
function marked(sf, lines, node) {
  const line = (pos) => sf.getLineAndCharacterOfPosition(pos).line;
  const start = line(node.getStart(sf));
  const above = lines[start - 1] ?? '';
  const bodyStart = node.body ? line(node.body.getStart(sf)) : line(node.getStart(sf));
  const first = lines[bodyStart + 1] ?? '';
  return [above, first].some((l) => l.trim().startsWith(LONG_MARKER));
}

/** Functions in `sf` spanning over MAX_FUNCTION_LINES lines with no LONG_MARKER reason. */
function longFunctions(sf, lines) {
  const found = [];
  const visit = (node) => {
    const name = ts.isFunctionLike(node) && node.body ? functionName(sf, node) : undefined;
    if (name !== undefined) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const span = sf.getLineAndCharacterOfPosition(node.getEnd()).line - start + 1;
      if (span > MAX_FUNCTION_LINES && !marked(sf, lines, node)) found.push({ name, line: start + 1, span });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The size problems of one non-test source: the file over MAX_FILE_LINES, functions over MAX_FUNCTION_LINES. */
function sizeProblems(file, text, lines) {
  const problems = [];
  const count = text.endsWith('\n') ? lines.length - 1 : lines.length;
  if (count > MAX_FILE_LINES) {
    problems.push(`${file}: ${count} lines, over ${MAX_FILE_LINES}: split it by concern into small named modules`);
  }
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  for (const f of longFunctions(sf, lines)) {
    problems.push(
      `${file}:${f.line}: function ${f.name} spans ${f.span} lines, over ${MAX_FUNCTION_LINES}: ` +
        `split it, or start it with a one-line \`${LONG_MARKER} <reason>\` comment`,
    );
  }
  return problems;
}

const long = [];
const big = [];
const staleAllow = [...SIZE_ALLOW].filter((f) => !files.includes(f));
for (const file of files) {
  let text;
  try {
    text = readFileSync(join(root, file), 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  const lines = text.split('\n');
  if (sized(file)) {
    const problems = sizeProblems(file, text, lines);
    if (!SIZE_ALLOW.has(file)) big.push(...problems);
    else if (problems.length === 0) staleAllow.push(file);
  }
  if (!lines.some((l) => [...l].length > MAX)) continue;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
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
for (const b of big) console.error(b);
for (const f of staleAllow) console.error(`${f}: in SIZE_ALLOW but has no size problem (or is gone): drop it`);
for (const l of long.slice(0, 50)) console.error(l);
if (long.length > 50) console.error(`… and ${long.length - 50} more`);
if (big.length > 0 || staleAllow.length > 0) {
  console.error(`${big.length + staleAllow.length} size problem(s)`);
  process.exitCode = 1;
}
if (long.length > 0) {
  console.error(
    `${long.length} line(s) over ${MAX} characters: wrap them (split a long string with +, a comment over lines)`,
  );
  process.exit(1);
}
