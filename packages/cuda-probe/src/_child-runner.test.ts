// runChild's endOnResult: a trial ends when the child closes its result channel after a
// successful result (the child is then killed instead of waited for); anything else waits for
// the exit and its code. Real children (process.execPath).
import { describe, expect, it } from 'vitest';
import { runChild } from './_child-runner';
import { buildLaunch } from './_launch';

const child = (script: string) => buildLaunch({ file: process.execPath, args: ['-e', script], allowShell: false });
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('[slow] runChild endOnResult (real children)', { timeout: 30_000 }, () => {
  it(
    'ok result, fd 3 closed, child lingering (a runtime tearing down): the run ends on the result and ' +
      'the child is killed',
    async () => {
      // The child would linger 120 s after its result; without endOnResult the run would wait for it.
      const run = await runChild({
        launch: child(
          `const fs = require('fs'); fs.writeSync(3, JSON.stringify({ ok: true, stepMs: 5 })); fs.closeSync(3); ` +
            `setTimeout(() => {}, 120000);`,
        ),
        timeoutMs: 25_000,
        resultChannel: true,
        endOnResult: true,
      });
      expect(run).toMatchObject({
        endedOnResult: true,
        result: { ok: true, stepMs: 5 },
        exitCode: null,
        signal: null,
        timedOut: false,
      });
      expect(run.exited).toBeInstanceOf(Promise);
      await run.exited;
      expect(alive(run.pid!)).toBe(false);
    },
  );

  it('a failed result (ok: false) waits for the exit and keeps its code', async () => {
    const run = await runChild({
      launch: child(
        `const fs = require('fs'); fs.writeSync(3, JSON.stringify({ ok: false, error: { message: 'boom' } })); ` +
          `fs.closeSync(3); setTimeout(() => process.exit(3), 300);`,
      ),
      timeoutMs: 25_000,
      resultChannel: true,
      endOnResult: true,
    });
    expect(run.endedOnResult).toBeUndefined();
    expect(run).toMatchObject({ exitCode: 3, result: { ok: false } });
  });

  it('without endOnResult a lingering child is waited for (its exit code is reported)', async () => {
    const run = await runChild({
      launch: child(
        `const fs = require('fs'); fs.writeSync(3, JSON.stringify({ ok: true })); fs.closeSync(3); setTimeout(() ` +
          `=> process.exit(0), 500);`,
      ),
      timeoutMs: 25_000,
      resultChannel: true,
    });
    expect(run.endedOnResult).toBeUndefined();
    expect(run).toMatchObject({ exitCode: 0, result: { ok: true } });
  });
});
