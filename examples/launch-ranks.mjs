#!/usr/bin/env node
// Starts N ranks of a trainer with torchrun's environment (Debian's torch 1.13 torchrun fails in its elastic
// agent's `to_map` / `Std.from_str`): WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
// Prints each rank's pid, forwards SIGTERM, SIGINT and SIGUSR1 to every rank, and exits with the first nonzero
// rank exit code (0 if none).
//
//   node examples/launch-ranks.mjs --nproc_per_node 2 [--nnodes 2 --node_rank 1] \
//     [--master_addr 127.0.0.1 --master_port 29500] -- python3 train.py --output_dir out
import { spawn } from 'node:child_process';

const argv = process.argv.slice(2);
const cut = argv.indexOf('--');
if (cut === -1 || cut === argv.length - 1) throw new Error('usage: launch-ranks.mjs [options] -- command args…');
// As torchrun, each option may come from the environment instead (PET_NPROC_PER_NODE, PET_NNODES, …): the command
// line then stays the same whatever the layout, and so does a supervised run's identity.
const opt = (name, fallback) => {
  const i = argv.slice(0, cut).indexOf(`--${name}`);
  return i === -1 ? (process.env[`PET_${name.toUpperCase()}`] ?? fallback) : argv[i + 1];
};
const perNode = Number(opt('nproc_per_node', 1));
const nnodes = Number(opt('nnodes', 1));
const nodeRank = Number(opt('node_rank', 0));
const [cmd, ...args] = argv.slice(cut + 1);
const env = (local) => ({
  ...process.env,
  WORLD_SIZE: String(perNode * nnodes),
  RANK: String(nodeRank * perNode + local),
  LOCAL_RANK: String(local),
  LOCAL_WORLD_SIZE: String(perNode),
  MASTER_ADDR: opt('master_addr', process.env.MASTER_ADDR ?? '127.0.0.1'),
  MASTER_PORT: opt('master_port', process.env.MASTER_PORT ?? '29500'),
});
const ranks = Array.from({ length: perNode }, (_, i) => spawn(cmd, args, { env: env(i), stdio: 'inherit' }));
for (const [i, r] of ranks.entries())
  process.stdout.write(`launch-ranks: rank ${nodeRank * perNode + i} pid ${r.pid}\n`);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGUSR1'])
  process.on(sig, () => {
    for (const r of ranks) r.kill(sig);
  });
const codes = await Promise.all(ranks.map((r) => new Promise((res) => r.on('exit', (c, s) => res(c ?? (s ? 1 : 0))))));
process.exit(codes.find((c) => c !== 0) ?? 0);
