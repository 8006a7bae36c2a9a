// `soup --help` builds the whole command tree from the commands/*.options.ts specs; no command's module,
// nor what it imports (ONNX Runtime, the Hub client, the supervisor), loads until that command runs.
import { runNode } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
// Prints every module URL the loader resolves, one `LOAD <url>` line each on stderr.
const hook = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent('export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write("LOAD " + r.url + "\\\\n"); return r; }'));`,
)}`;

describe('[slow] lazy commands', { timeout: 60_000 }, () => {
  it('soup --help loads no command module and none of their heavy packages', async () => {
    const r = await runNode(['--import', hook, bin, '--help'], {
      env: { PATH: process.env.PATH, NO_COLOR: '1' },
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(0);
    // The supervisor's `signals` entry (the session-ending signals main() judges from its first line) imports nothing.
    const loaded = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('LOAD ') && !l.endsWith('/packages/supervisor/dist/signals.js'));
    expect(loaded.some((l) => l.includes('commander'))).toBe(true);
    for (const heavy of ['onnxruntime-node', 'onnx-train', 'hub-ckpt', 'supervisor', 'cuda-probe', '@huggingface'])
      expect(
        loaded.filter((l) => l.includes(heavy)),
        heavy,
      ).toEqual([]);
  });
});
