// A launcher for tests, as torchrun is one: starts the command after `--` twice, as RANK 0 and 1 of WORLD_SIZE 2,
// and exits with the first failure (137 for a rank killed by SIGKILL).
const { spawn } = require('node:child_process');
const [file, ...args] = process.argv.slice(process.argv.indexOf('--') + 1);
let left = 2;
let failed = null;
for (const rank of [0, 1]) {
  const env = { ...process.env, RANK: String(rank), WORLD_SIZE: '2' };
  spawn(file, args, { stdio: 'inherit', env }).on('exit', (code, signal) => {
    if (failed === null && code !== 0) failed = signal === 'SIGKILL' ? 137 : (code ?? 1);
    if (--left === 0) process.exit(failed ?? 0);
  });
}
