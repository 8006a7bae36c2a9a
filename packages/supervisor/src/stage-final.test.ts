// final/ needs model weights by content: what a trainer saves beside its model (optimizer, scheduler,
// training arguments) is refused whatever its extension; a safetensors file, a torch.save archive and a zip of
// model safetensors are accepted. With PyTorch, the same with the files torch itself writes.
import { PYTHON, runProcess, torchMissing, useTempDir } from '@soup/test-utils';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stageFinal } from './stage-final';

/** A one-tensor safetensors file. */
function safetensors(): Buffer {
  const h = Buffer.from(JSON.stringify({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }));
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([n, h, Buffer.alloc(8, 1)]);
}

/** A stored zip of these entries (crc left 0: only names and the end record are read). */
function zip(entries: Record<string, Buffer>): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let at = 0;
  for (const [name, data] of Object.entries(entries)) {
    const n = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(n.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(n.length, 28);
    c.writeUInt32LE(at, 42);
    parts.push(local, n, data);
    central.push(c, n);
    at += 30 + n.length + data.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...parts, cd, end]);
}

/** An output folder holding these top-level files; the message stageFinal throws, or null when it stages. */
function refusal(files: Record<string, Buffer>): string | null {
  const out = join(useTempDir('soup-stage-final-'), 'out');
  mkdirSync(out);
  for (const [f, b] of Object.entries(files)) writeFileSync(join(out, f), b);
  try {
    stageFinal({ outputDir: out, finalDir: null, newest: null }).cleanup();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

const TORCH_ZIP = zip({ 'archive/data.pkl': Buffer.from('pickle'), 'archive/data/0': Buffer.alloc(16) });

describe('final/ holds model weights by content', () => {
  it('optimizer.pt, scheduler.pt and training_args.bin alone are not a model; the message names them', () => {
    const m = refusal({
      'optimizer.pt': TORCH_ZIP,
      'scheduler.pt': TORCH_ZIP,
      'training_args.bin': TORCH_ZIP,
      'trainer_state.json': Buffer.from('{}'),
    });
    expect(m).toMatch(/final\/ would hold no model weights: the top of .* has optimizer\.pt, scheduler\.pt/);
    expect(m).toContain('training_args.bin');
    // A weights extension is not weights: random bytes in model.safetensors, pytorch_model.bin, model.ckpt.
    const fake = refusal({
      'model.safetensors': randomBytes(64),
      'pytorch_model.bin': randomBytes(64),
      'model.ckpt': zip({ 'notes.txt': Buffer.from('no tensors') }),
    });
    expect(fake).toContain('model.ckpt, model.safetensors, pytorch_model.bin');
  });

  it('a safetensors file (any name), a torch.save archive (data.pkl + tensor data), a zip of model safetensors', () => {
    expect(refusal({ 'model.safetensors': safetensors(), 'optimizer.pt': TORCH_ZIP })).toBeNull();
    expect(refusal({ 'pytorch_model.bin': TORCH_ZIP })).toBeNull();
    // Content, not extension: safetensors bytes under a name no extension list knows.
    expect(refusal({ 'weights.st': safetensors() })).toBeNull();
    expect(refusal({ 'epoch=0-step=8.ckpt': zip({ 'model.safetensors': safetensors() }) })).toBeNull();
  });
});

const noTorch = torchMissing();
if (noTorch) process.stdout.write(`stage-final.test.ts: PyTorch twin skipped: ${noTorch}\n`);

describe.skipIf(noTorch !== null)('final/ holds model weights by content, files torch writes', () => {
  it('torch.save of an optimizer, a scheduler and training args is refused; a state_dict is a model', async () => {
    const dir = useTempDir('soup-stage-final-torch-');
    const script = `
import torch, sys, os
out = sys.argv[1]
m = torch.nn.Linear(2, 2)
opt = torch.optim.AdamW(m.parameters())
m(torch.ones(1, 2)).sum().backward()
opt.step()
os.makedirs(os.path.join(out, "state"))
torch.save(opt.state_dict(), os.path.join(out, "state", "optimizer.pt"))
torch.save(torch.optim.lr_scheduler.StepLR(opt, 1).state_dict(), os.path.join(out, "state", "scheduler.pt"))
torch.save({"lr": 0.1}, os.path.join(out, "state", "training_args.bin"))
os.makedirs(os.path.join(out, "model"))
torch.save(m.state_dict(), os.path.join(out, "model", "pytorch_model.bin"))
`;
    const r = await runProcess(PYTHON, ['-c', script, dir], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const stage = (sub: string): string | null => {
      try {
        stageFinal({ outputDir: join(dir, sub), finalDir: null, newest: null }).cleanup();
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(stage('state')).toContain('has optimizer.pt, scheduler.pt, training_args.bin');
    expect(stage('model')).toBeNull();
  });
});
