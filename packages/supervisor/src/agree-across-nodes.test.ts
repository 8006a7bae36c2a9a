// The nodes folder: two real processes, each with its own answer, agree on the smaller m; a node that never answers
// is named after the timeout; a previous session's answer does not count.
import { runNode, useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exchangeMicroAnswers } from './agree-across-nodes';
import { MicroAgreementError } from './errors';

const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** One node: its own probe answer `m` under `budgetMiB`, agreeing through `dir`. */
const nodeScript = (dir: string, rank: number, m: number, budgetMiB: number): string => `
  const { agreeAcrossNodes } = await import(${JSON.stringify(DIST)});
  const resolve = agreeAcrossNodes({
    resolve: async () => ({ microBatchSize: ${m}, source: 'probe' }),
    nodes: { rank: ${rank}, count: 2, dir: ${JSON.stringify(dir)} },
    budgetBytes: ${budgetMiB * 2 ** 20}, globalBatchSize: 16, worldSize: 2, host: 'node${rank}',
    say: (line) => console.log(line), timeoutMs: 20000,
  });
  const r = await resolve({ resumeFrom: null, step: null });
  console.log('trains', r.microBatchSize, r.source);`;

describe('agreeAcrossNodes / exchangeMicroAnswers', () => {
  it('two processes with different answers both train the smaller m, and say which node decided', async () => {
    const dir = join(useTempDir('soup-micro-nodes-'), '.soup-nodes');
    const [a, b] = await Promise.all([
      runNode(['--input-type=module', '-e', nodeScript(dir, 0, 8, 900)]),
      runNode(['--input-type=module', '-e', nodeScript(dir, 1, 2, 300)]),
    ]);
    expect(a.stderr).toBe('');
    expect(a.stdout).toBe('micro-batch 2: node 1 (node1) fits least (budget 300 MiB)\ntrains 2 node 1\n');
    expect(b.stdout).toBe('micro-batch 2: node 1 (node1) fits least (budget 300 MiB)\ntrains 2 probe\n');
  });

  it("names the node that never answered; a previous session's answer does not count", async () => {
    const dir = useTempDir('soup-micro-missing-');
    writeFileSync(join(dir, 'micro-1.json'), JSON.stringify({ rank: 1, host: 'b', m: 1, budget: null, session: 'x' }));
    const err = await exchangeMicroAnswers({
      dir,
      answer: { rank: 0, host: 'a', m: 4, budget: null },
      count: 3,
      session: 'resume-10',
      timeoutMs: 300,
      pollMs: 50,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MicroAgreementError);
    expect((err as MicroAgreementError).missingRanks).toEqual([1, 2]);
    expect((err as Error).message).toMatch(/^micro-batch agreement: no answer from nodes 1, 2 in .* within 0.3 s/);
  });
});
