import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { realTmpEntries } from './_sandbox';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

test("an example's temp folders are told from another test's that start with the same words", () => {
  const prefix = 'soup-sandbox-check-';
  const mine = mkdtempSync(join(tmpdir(), prefix));
  const other = join(tmpdir(), `${prefix}stepdown-8N6Arb`); // a concurrent test's mkdtemp with a longer prefix
  mkdirSync(other);
  made.push(mine, other);
  expect([...realTmpEntries([prefix])]).toEqual([mine.slice(tmpdir().length + 1)]);
});
