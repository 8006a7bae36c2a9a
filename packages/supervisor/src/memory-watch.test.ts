import { describe, expect, it } from 'vitest';
import { startMemoryWatch } from './memory-watch';

describe('startMemoryWatch', () => {
  it(
    'keeps the peak with the step it was sampled at, per launch and over the session; warns once when ' +
      'it passes the limit',
    async () => {
      const series = [100, 300, 250, 900, 400];
      let i = 0;
      let step = 1;
      const warnings: string[] = [];
      const w = startMemoryWatch(
        {
          read: async () => ({ bytes: series[Math.min(i++, series.length - 1)]! }),
          method: 'tree-rss',
          pollMs: 5,
          budgetBytes: 1000,
          maxMemoryBytes: 280,
          formatBytes: (n) => `${n} B`,
        },
        { stepNow: () => step++, warn: (l) => warnings.push(l) },
      );
      w.attach(42);
      await new Promise((r) => setTimeout(r, 80));
      const launchPeak = await w.detach();
      expect(launchPeak).toBe(900);
      const r = w.report();
      expect(r).toMatchObject({
        peak_bytes: 900,
        peak_step: 4,
        budget_bytes: 1000,
        headroom_bytes: 100,
        max_memory_passed: true,
        max_memory_passed_step: 2,
        method: 'tree-rss',
      });
      expect(warnings).toEqual(["memory: the trainer's peak passed --max-memory 280 B at step 2: 300 B (tree-rss)"]);
      // A relaunch: its own peak starts again; the session's stays.
      series.splice(0, series.length, 50);
      i = 0;
      w.attach(43);
      expect(await w.detach()).toBe(50);
      expect(w.report().peak_bytes).toBe(900);
      expect(warnings).toHaveLength(1);
    },
  );
});
