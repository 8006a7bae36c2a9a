// Installed alone: supervise() runs a real trainer process, pushes its checkpoint, and ends with final/.
import { readFileSync } from 'node:fs';
import { DirStore } from '@soup/hub-ckpt';
import { supervise } from '@soup/supervisor';
import { createSignalJudge, SESSION_SIGNALS } from '@soup/supervisor/signals';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const trainer = [
  "const fs = require('node:fs'), p = require('node:path'), o = process.argv[1];",
  "fs.mkdirSync(p.join(o, 'checkpoint-5'), { recursive: true });",
  "fs.writeFileSync(p.join(o, 'checkpoint-5', 'model.safetensors'), 'w5');",
  "fs.writeFileSync(p.join(o, 'checkpoint-5', 'trainer_state.json'), JSON.stringify({ global_step: 5, max_steps: " +
    '5 }));',
  // final/ is judged by content: a safetensors header naming one 4-byte tensor, then its bytes.
  'const h = Buffer.from(\'{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}\'), n = Buffer.alloc(8);',
  'n.writeBigUInt64LE(BigInt(h.length));',
  "fs.writeFileSync(p.join(o, 'model.safetensors'), Buffer.concat([n, h, Buffer.alloc(4)]));",
].join('\n');
const lines = [];
const r = await supervise({
  argv: [process.execPath, '-e', trainer, '{output_dir}'],
  store: new DirStore({ root: `${process.cwd()}/repo` }),
  outputDir: `${process.cwd()}/out`,
  cwd: process.cwd(),
  env: process.env,
  signal: new AbortController().signal,
  settleMs: 200,
  pollMs: 50,
  pushNice: 0,
  onEvent: (e) => lines.push(e.line),
});
check(r.outcome === 'complete' && r.step === 5 && r.evidence === 'horizon-reached', `outcome: ${JSON.stringify(r)}`);
const pointer = JSON.parse(readFileSync('repo/latest.json', 'utf8'));
check(pointer.terminal === true && pointer.path_in_repo === 'final', `pointer: ${JSON.stringify(pointer)}`);
check(readFileSync('repo/ckpt/checkpoint-5/model.safetensors', 'utf8') === 'w5', 'checkpoint-5 was not pushed');
const judge = createSignalJudge();
check(SESSION_SIGNALS.includes('SIGUSR1') && judge.judge('SIGTERM') === 'end', 'the signals subpath');
console.log('SMOKE OK');
