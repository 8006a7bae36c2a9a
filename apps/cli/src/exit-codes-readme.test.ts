// The exit codes are written once, in exit-codes.ts: `soup --help` and the README's table are generated from it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { README_PATH, withExitCodesTable } from '../scripts/exit-codes-table';
import { EXIT_CODES, exitCodesHelp } from './exit-codes';
import { main } from './index';

describe('exit codes, documented from exit-codes.ts', () => {
  it("the README's table is the generated one (npm run docs:exit-codes -w @soup/cli rewrites it)", () => {
    const readme = readFileSync(README_PATH, 'utf8');
    expect(readme).toBe(withExitCodesTable(readme));
    for (const code of Object.values(EXIT_CODES)) expect(readme).toMatch(new RegExp(`^\\| ${code} +\\| `, 'm'));
  });

  it('soup --help lists every exit code, each once', async () => {
    const out: string[] = [];
    const io = { stdout: { write: (s: string) => void out.push(s) }, stderr: { write: () => {} }, env: {} };
    expect(await main(['node', 'soup', '--help'], io)).toBe(0);
    const help = out.join('');
    expect(help).toContain(`Exit codes:\n${exitCodesHelp()}\n`);
    for (const code of Object.values(EXIT_CODES))
      expect(help.match(new RegExp(`^  ${code} +\\S`, 'gm'))).toHaveLength(1);
    for (const line of exitCodesHelp().split('\n')) expect(line.length).toBeLessThanOrEqual(112);
  });
});
