// Source text for the small trainers the supervisor's tests run with `node -e`.

/** `st(v)`: a safetensors file holding one byte, v, as bytes: enough for final/'s check of model weights. */
export const ONE_BYTE_SAFETENSORS_JS = `
const st = (v) => {
  const h = Buffer.from('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}');
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([n, h, Buffer.from([v])]);
};`;
