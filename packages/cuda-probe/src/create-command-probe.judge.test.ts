import { writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { createCommandProbe } from './create-command-probe';
import { ProbeChildError } from './errors';

// Real child processes: what the command raised decides, not what it logged.
describe('[slow] createCommandProbe judges what the trainer raised', { timeout: 60_000 }, () => {
  it(
    'a trainer that logs a memory hint, then fails with KeyError, is an error with its stderr tail, ' +
      'not "does not fit"',
    async () => {
      const dir = useTempDir();
      const path = join(dir, 'trainer.cjs');
      writeFileSync(
        path,
        `for (let i = 1; i <= 30; i++) console.error('log line ' + i);
console.error('hint: lower the batch if you run out of memory');
console.error('Traceback (most recent call last):\\n  File "train.py", line 3, in <module>\\n    row["text"]\\nKeyError: \\'text\\'');
process.exit(1);`,
      );
      const probe = createCommandProbe({ command: [process.execPath, path, '{batch_size}'], timeoutMs: 30_000 });
      const err = await probe(4).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ProbeChildError);
      const e = err as ProbeChildError;
      expect(e.message.split('\n')[0]).toMatch(/failed \(exit code 1\): KeyError: 'text'/);
      const tail = e.stderrTail.split('\n');
      expect(tail).toHaveLength(20);
      expect(tail.at(-1)).toBe("KeyError: 'text'");
    },
  );

  it(
    'a bash wrapper whose child is SIGKILLed (exit 137, "Killed") with no sign of memory is "killed ' +
      'by signal 9 (not memory)"',
    async () => {
      const dir = useTempDir();
      const wrapper = join(dir, 'run.sh');
      // The inner process kills itself with SIGKILL, as the OOM killer would; bash reports "Killed" and exits 137.
      writeFileSync(
        wrapper,
        `#!/bin/bash\necho "loading shards"\n${JSON.stringify(process.execPath)} -e "process.kill(process.pid, ` +
          `'SIGKILL')"\nexit $?\n`,
      );
      chmodSync(wrapper, 0o755);
      const probe = createCommandProbe({ command: [wrapper, '{batch_size}'], timeoutMs: 30_000 });
      const r = await probe(64).catch((e: unknown) => e);
      expect(r).toBeInstanceOf(ProbeChildError);
      expect((r as Error).message).toMatch(/batch_size=64 was killed by signal 9 \(not memory\)/);
    },
  );
});
