// Source text for the small trainers the supervisor's tests run with `node -e`.

/** `st(v)`: a safetensors file holding one byte, v, as bytes: enough for final/'s check of model weights. */
export const ONE_BYTE_SAFETENSORS_JS = `
const st = (v) => {
  const h = Buffer.from('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}');
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([n, h, Buffer.from([v])]);
};`;

/** Writes checkpoint-1 (a one-tensor safetensors and a marker saying `maxSteps`) into argv[1], and exits 0. */
export const oneCheckpointTrainer = (maxSteps: number): string => `
  const fs = require('node:fs'), path = require('node:path');
  const d = path.join(process.argv[1], 'checkpoint-1');
  fs.mkdirSync(d, { recursive: true });
  // final/ is judged by content: a safetensors header naming one 4-byte tensor, then its bytes.
  const h = Buffer.from('{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}'), n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  fs.writeFileSync(path.join(d, 'model.safetensors'), Buffer.concat([n, h, Buffer.alloc(4)]));
  fs.writeFileSync(path.join(d, 'trainer_state.json'), JSON.stringify({ global_step: 1, max_steps: ${maxSteps} }));`;
