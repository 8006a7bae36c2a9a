// The run-long peak of `soup run`: the trainer's whole process tree is sampled for the whole session.
// A trainer whose eval pass (after step 8) holds 400 MiB more than a training step: its one-step
// probe never sees it, the session summary does (peak, step, budget, headroom), and --max-memory
// warns once, naming the step.
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_TRAINER, readJson, runJsonOf, soupEnv, soupRun } from './_run-test-helpers';

const MiB = 2 ** 20;

interface Memory {
  peak_bytes: number;
  peak_at: string;
  peak_step: number;
  budget_bytes: number;
  budget_source: string;
  headroom_bytes: number;
  max_memory_bytes: number;
  max_memory_passed_at: string | null;
  method: string;
}

describe('[slow] soup run: the peak over the whole run', { timeout: 300_000 }, () => {
  it('an eval pass above the one-step peak: reported with its step, budget and headroom; --max-memory warns once naming step 8', async () => {
    const cwd = useTempDir('soup-run-peak-');
    const cmd = [process.execPath, NODE_TRAINER];
    const argv = [...cmd, '--output_dir', '{output_dir}', '--per_device_train_batch_size', '{micro_batch_size}', '--gradient_accumulation_steps', '{grad_accum}', '--max_steps', '12', '--save_steps', '4', '--resume_from_checkpoint', '{resume_from}'];
    const probe = [...cmd, '--output_dir', 'probe-out', '--per_device_train_batch_size', '{micro_batch_size}', '--max_steps', '1', '--save_steps', '0'].join(' ');
    const env = soupEnv(cwd, { SOUP_EXAMPLE_EVAL_MEMORY: '8:400' });
    const r = await soupRun(cwd, ['--repo', 'file://store', '--global-batch-size', '16', '--budget', '6GiB', '--max-memory', '300MiB', '--settle', '500ms', '--probe', probe], argv, env);
    expect(r.code, r.stderr).toBe(0);
    // The probe's one step stays far below the eval pass.
    const trialPeaks = [...(r.stdout + r.stderr).matchAll(/^\s+batch\s+\d+\s+fits\s+peak ([\d.]+) MiB/gm)].map((m) => Number(m[1]));
    expect(trialPeaks.length).toBeGreaterThan(0);
    expect(Math.max(...trialPeaks)).toBeLessThan(300);

    const memory = runJsonOf<{ memory: Memory }>(r.stdout).memory;
    expect(memory).toMatchObject({ peak_at: 'step 8', peak_step: 8, budget_bytes: 6 * 2 ** 30, budget_source: 'flag', max_memory_bytes: 300 * MiB, max_memory_passed_at: 'step 8', method: 'tree-rss' });
    expect(memory.peak_bytes).toBeGreaterThan(400 * MiB);
    expect(memory.headroom_bytes).toBe(memory.budget_bytes - memory.peak_bytes);
    expect(r.stdout).toMatch(/memory: session peak [\d.]+ MiB \(the trainer's whole process tree, sum of RSS, sampled\) at step 8; budget 6\.00 GiB \(--budget\), headroom [\d.]+ GiB; passed --max-memory 300 MiB at step 8/);
    expect(r.stderr.match(/the trainer's peak passed --max-memory 300 MiB at step 8: /g)).toHaveLength(1);
    const session = readJson<{ sessions: { memory: { peak_step: number; peak_bytes: number; max_memory_passed_step: number } }[] }>(join(cwd, 'store', 'soup_run.json')).sessions[0]!;
    expect(session.memory).toMatchObject({ peak_step: 8, max_memory_passed_step: 8, peak_bytes: memory.peak_bytes });
  });
});
