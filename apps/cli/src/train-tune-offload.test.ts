// activation_offloading: auto is a measured choice in soup plan / soup train: no offload against
// the device's offload (disk on the CPU), each at its largest fitting micro-batch, the offload only
// above what no offload fits; the choice is applied (segmented step, scratch folder) and trained.
import type { TuneRow } from '@soup/tune';
import { runNode, useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOUP_BIN } from '../test/run-helpers';
import { pastItsBest } from '@soup/tune';

interface PlanJson {
  micro_batch_size: number;
  offload: { setting: string | null; target: string | null; execution: string; save_dir: string | null };
  tune?: { chosen: number; reason: string; rows: TuneRow[] };
}

describe('[slow] soup plan / train: activation_offloading auto, measured', { timeout: 900_000 }, () => {
  it(
    'small template, no checkpointing, threads 1: at 150 MiB no offload wins, at 70 MiB only disk ' +
      'fits and is trained; no scratch folder left',
    async () => {
      const cwd = useTempDir();
      const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
      expect((await runNode([SOUP_BIN, 'init', '--template', 'small'], { cwd, env, timeoutMs: 60_000 })).code).toBe(0);
      const yaml = readFileSync(join(cwd, 'soup.yaml'), 'utf8')
        .replace(/^( {2}seed: .*)$/m, '$1\n  threads: 1')
        .replace(/^ {2}gradient_checkpointing: auto /m, '  gradient_checkpointing: false')
        .replace(/^ {2}activation_offloading: null /m, '  activation_offloading: auto ');
      expect(yaml).toMatch(/^ {2}activation_offloading: auto /m);
      writeFileSync(join(cwd, 'soup.yaml'), yaml);
      const output = join(cwd, 'soup-output');

      // 150 MiB: no offload fits 8 (134 MiB measured), disk 16; the disk step costs ~1.5× a fused one, so no offload
      // wins.
      const a = await runNode([SOUP_BIN, 'plan', '--budget', '150MiB', '--no-cache', '--json'], {
        cwd,
        env,
        timeoutMs: 600_000,
      });
      expect(a.code, a.stderr).toBe(0);
      const planA = JSON.parse(a.stdout) as PlanJson;
      const rowsA = planA.tune!.rows;
      const sized = (v: string): number[] =>
        rowsA
          .filter((r) => r.values.activation_offloading === v && r.microBatchSize !== null)
          .map((r) => r.microBatchSize!);
      expect(sized('null').length).toBeGreaterThan(0);
      // The offload is tried only above the largest micro-batch that fits without it, and not at all
      // when no offload is already slower there than below it (soup's own rows show which).
      const nullTop = Math.max(...sized('null'));
      const past = pastItsBest(
        rowsA.filter((r) => r.values.activation_offloading === 'null'),
        nullTop,
      );
      if (past)
        expect(rowsA.find((r) => r.values.activation_offloading === 'disk')!.note).toMatch(
          new RegExp(`^cannot win: .* is slower at ${nullTop} than at ${past.below.microBatchSize} `),
        );
      else expect(Math.min(...sized('disk'))).toBeGreaterThan(nullTop);
      const chosenA = rowsA[planA.tune!.chosen]!;
      expect(chosenA.values.activation_offloading).toBe('null');
      expect(planA.offload).toMatchObject({ setting: 'auto', target: null, execution: 'fused' });
      expect(planA.micro_batch_size).toBe(chosenA.microBatchSize);
      expect(existsSync(output), 'soup plan left the offload scratch folder it made').toBe(false);

      // 70 MiB: nothing fits without offload (85 MiB measured at 1, 89 at 4); disk does (63 at 4).
      const b = await runNode([SOUP_BIN, 'plan', '--budget', '70MiB', '--json'], { cwd, env, timeoutMs: 600_000 });
      expect(b.code, b.stderr).toBe(0);
      const planB = JSON.parse(b.stdout) as PlanJson;
      const rowsB = planB.tune!.rows;
      expect(rowsB.find((r) => r.values.activation_offloading === 'null')!.note).toBe('no micro-batch fits');
      expect(rowsB[planB.tune!.chosen]!.values.activation_offloading).toBe('disk');
      expect(planB.offload).toMatchObject({
        setting: 'auto',
        target: 'disk',
        execution: 'segmented',
        save_dir: join(output, 'offload'),
      });
      expect(existsSync(output)).toBe(false);

      // soup train applies the remembered choice: the disk offload's segmented step, two steps.
      const t = await runNode([SOUP_BIN, 'train', '--budget', '70MiB', '--stop-after-steps', '2', '--json'], {
        cwd,
        env,
        timeoutMs: 600_000,
      });
      expect(t.code, t.stderr).toBe(75);
      expect(t.stderr).toMatch(/activation_offloading: auto, from the tune cache/);
      const run = JSON.parse(t.stdout) as { offload: string | null; micro_batch_size: number; final_step: number };
      expect(run).toMatchObject({ offload: 'disk', micro_batch_size: planB.micro_batch_size, final_step: 2 });
      expect(existsSync(join(output, 'offload')), 'the scratch folder soup train made is removed at the end').toBe(
        false,
      );
    },
  );
});
