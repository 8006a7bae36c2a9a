import { describe, expect, it } from 'vitest';
import { spawnUntil } from './child';
import { processTree } from './process-tree';

// A child that starts a grandchild and prints its pid: the tree is the child, then the grandchild.
const PARENT = `
const { spawn } = require('node:child_process');
const g = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore' });
console.log('grandchild ' + g.pid);
setTimeout(() => {}, 10000);
`;

describe('processTree', () => {
  it('lists a process, then its child, then the child below that; nothing above it', async () => {
    const { child, output } = await spawnUntil(process.execPath, ['-e', PARENT], /grandchild \d+/, {
      timeoutMs: 10_000,
    });
    const grandchild = Number(/grandchild (\d+)/.exec(output)![1]);
    try {
      expect(processTree(child.pid!)).toEqual([child.pid, grandchild]);
      expect(processTree(grandchild)).toEqual([grandchild]);
    } finally {
      process.kill(grandchild, 'SIGKILL');
      child.kill('SIGKILL');
    }
  });
});
