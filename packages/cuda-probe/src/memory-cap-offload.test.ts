// Acceptance (issue 15): under a hard memory cap (a real cgroup, page cache counted), the fused
// training step is killed by the OOM killer, and the same step with its saved activations
// offloaded to disk completes under the same cap — with the loss of an uncapped fused step, bit
// for bit (1 thread).
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { memoryCgroupSupport, runInMemoryCgroup } from './run-in-memory-cgroup';

const here = dirname(fileURLToPath(import.meta.url));
const child = join(here, '_fixtures', 'capped-train-step.mjs');
const MiB = 2 ** 20;
// The offload bench's geometry at a batch where the fused step's activations dominate.
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024, tieEmbeddings: true };
const batchSize = 16;
/** The cap, as a fraction of the uncapped fused step's cgroup peak. */
const CAP_FRACTION = 0.8;

const support = memoryCgroupSupport();
if (!support.available)
  console.log(`[skip] memory-cap acceptance test: no memory cgroup can be made here (${support.reason})`);

interface StepOut {
  losses: number[];
  scratchFilesLeft: number;
}

describe.skipIf(!support.available)('a step that does not fit under a hard memory cap', () => {
  it('[slow] fused is OOM-killed; disk offload completes under the same cap with the uncapped fused loss, bit for ' +
    'bit', {
    timeout: 120_000,
  }, async () => {
    const tmpIsRam = [0x01021994, 0x858458f6].includes(Number(statfsSync(tmpdir()).type)); // tmpfs, ramfs
    const scratchParent = tmpIsRam ? here : tmpdir(); // never a tmpfs: scratch files there stay in RAM
    const cwd = mkdtempSync(join(scratchParent, 'soup-i15-accept-'));
    onTestFinished(() => rmSync(cwd, { recursive: true, force: true }));
    const run = (mode: 'fused' | 'disk', limitBytes: number) =>
      runInMemoryCgroup({
        file: process.execPath,
        args: [child, JSON.stringify({ mode, spec, batchSize, steps: 2 })],
        cwd,
        limitBytes,
        timeoutMs: 100_000,
        namePrefix: 'soup-i15-accept',
      });

    const free = await run('fused', 8192 * MiB);
    expect(free.exitCode, free.stderr).toBe(0);
    const reference = JSON.parse(free.stdout) as StepOut;
    const capBytes = Math.floor((free.cgroup.peakBytes! * CAP_FRACTION) / 4096) * 4096;

    const fused = await run('fused', capBytes);
    expect(fused.exitCode).not.toBe(0);
    expect(fused.signal).toBe('SIGKILL');
    expect(fused.cgroup.oomKilled || (fused.cgroup.limitHits ?? 0) > 0).toBe(true);
    expect(fused.cgroup.oomKills).toBeGreaterThan(0);

    const disk = await run('disk', capBytes);
    expect(disk.exitCode, disk.stderr).toBe(0);
    expect(disk.cgroup.oomKills).toBe(0);
    expect(disk.cgroup.peakBytes!).toBeLessThanOrEqual(capBytes);
    const out = JSON.parse(disk.stdout) as StepOut;
    expect(out.scratchFilesLeft).toBe(0);
    // bit for bit: the same float64 values, every step
    expect(out.losses.map((l) => l.toString())).toEqual(reference.losses.map((l) => l.toString()));
    expect(out.losses).toHaveLength(2);
    console.log(
      `[memory cap] cap ${Math.round(capBytes / MiB)} MiB (${CAP_FRACTION} × fused uncapped peak ` +
        `${Math.round(free.cgroup.peakBytes! / MiB)} MiB): ` +
        `fused OOM-killed (oom_kill ${fused.cgroup.oomKills}); disk completed, peak ` +
        `${Math.round(disk.cgroup.peakBytes! / MiB)} MiB, losses ${out.losses.join(', ')}`,
    );
  });
});
