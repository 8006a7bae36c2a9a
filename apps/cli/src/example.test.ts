// The README's main job: `npx soup train -c apps/cli/examples/soup.yaml` on CPU with the
// directory store, run from a fresh working directory with an empty batch cache.
import { runNode, useTempDir } from '@soup/test-utils';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const example = fileURLToPath(new URL('../examples/soup.yaml', import.meta.url));

describe('[slow] the bundled example', { timeout: 300_000 }, () => {
  it('trains to the horizon offline, with progress, and pushes final/', async () => {
    const cwd = useTempDir();
    const t0 = Date.now();
    const r = await runNode([bin, 'train', '-c', example], {
      cwd,
      timeoutMs: 280_000,
      env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') },
    });
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(
      r.stdout
        .split('\n')
        .find((l) => l.startsWith('RUN_JSON '))!
        .slice(9),
    ) as Record<string, unknown>;
    // On a failure, the session's own lines say which push went wrong.
    expect(json, `${r.stdout.slice(-6000)}\n${r.stderr.slice(-6000)}`).toMatchObject({
      final_step: 200,
      segment_stop: false,
      val_skipped: false,
      final_pushed: true,
      batch_source: 'probe',
      pushed_steps: [50, 100, 150, 200],
    });
    expect(json.final_loss as number).toBeLessThan(2.5);
    expect(json.val_loss as number).toBeLessThan(2.5);
    // Progress, line-oriented because stderr is a pipe here.
    expect(r.stderr).toMatch(/train: \d+\/200 \(\d+%\) {2}loss \d\.\d{3}/);
    expect(r.stderr).toMatch(/batch +16 +fits/);
    expect(existsSync(join(cwd, 'soup-output', 'example', 'final', 'model.safetensors'))).toBe(true);
    console.log(`example: ${seconds.toFixed(1)} s wall, ${String(json.tokens_per_s)} tokens/s`);
  });
});
