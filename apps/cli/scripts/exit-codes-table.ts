// The README's exit-code table, generated from src/exit-codes.ts so the two cannot disagree.
// `npm run docs:exit-codes -w @soup/cli` rewrites the table; src/exit-codes-readme.test.ts fails when it is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { exitCodeList } from '../src/exit-codes';

export const README_PATH = fileURLToPath(new URL('../README.md', import.meta.url));
const START = '<!-- exit-codes: generated from src/exit-codes.ts by scripts/exit-codes-table.ts -->';
const END = '<!-- /exit-codes -->';

/** The Markdown table, in the README's own style (no padding). */
export function exitCodesTable(): string {
  const rows = exitCodeList().map(({ code, meaning }) => `| ${code} | ${meaning.readme} |`);
  return ['| code | meaning |', '|---|---|', ...rows].join('\n');
}

/** `readme` with the text between the markers replaced by the generated table. */
export function withExitCodesTable(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start === -1 || end < start) throw new Error(`README.md has no ${START} … ${END} markers`);
  return `${readme.slice(0, start + START.length)}\n\n${exitCodesTable()}\n\n${readme.slice(end)}`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(README_PATH, withExitCodesTable(readFileSync(README_PATH, 'utf8')));
}
