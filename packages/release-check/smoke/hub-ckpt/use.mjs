// Installed alone: DirStore push → verify → pointer, then a cold resume + pull with hash checks; the /proc reader.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { DirStore, pullCheckpoint, pushCheckpoint, resolveResume, validatePointer } from '@soup/hub-ckpt';
import { readProcStat } from '@soup/hub-ckpt/proc-stat';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
mkdirSync('work/checkpoint-10', { recursive: true });
writeFileSync('work/checkpoint-10/model.safetensors', Buffer.alloc(4096, 7));
writeFileSync('work/checkpoint-10/trainer_state.json', JSON.stringify({ step: 10 }));
const store = new DirStore({ root: `${process.cwd()}/repo` });
check((await resolveResume({ store, run: 'smoke' })).outcome === 'fresh', 'an empty store must resume fresh');
await pushCheckpoint({ store, step: 10, dir: 'work/checkpoint-10', run: 'smoke' });
const pointer = JSON.parse(readFileSync('repo/latest.json', 'utf8'));
check(validatePointer(pointer).errors.length === 0 && pointer.step === 10, `pointer: ${JSON.stringify(pointer)}`);
const r = await resolveResume({ store, run: 'smoke' });
check(r.outcome === 'resume' && r.step === 10, `resume: ${JSON.stringify(r)}`);
await pullCheckpoint({ store, pathInRepo: r.pathInRepo, dir: 'pulled' });
check(readFileSync('pulled/model.safetensors').equals(Buffer.alloc(4096, 7)), 'pulled bytes differ');
let refused = false;
try {
  await resolveResume({ store, run: 'other-run' });
} catch (err) {
  refused = err.code !== undefined;
}
check(refused, 'another run fingerprint must be refused');
// The /proc reader's own entry: this process, its parent and its start time.
const self = readProcStat('self');
check(self?.pid === process.pid && self.ppid === process.ppid && self.startTicks > 0, `stat: ${JSON.stringify(self)}`);
console.log('SMOKE OK');
