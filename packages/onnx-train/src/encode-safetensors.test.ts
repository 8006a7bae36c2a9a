import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeSafetensors } from './decode-safetensors';
import { encodeSafetensors, type SafetensorsTensor } from './encode-safetensors';
import { SafetensorsError } from './errors';

describe('encodeSafetensors / decodeSafetensors', () => {
  it('round-trips every dtype byte-for-byte, with metadata and an 8-byte-aligned header', () => {
    const tensors: [string, SafetensorsTensor][] = [
      ['f64', { dtype: 'F64', shape: [2, 2], data: Float64Array.of(1.5, -2, Math.PI, 1e-300) }],
      ['f32', { dtype: 'F32', shape: [3], data: Float32Array.of(0.1, -0, Number.POSITIVE_INFINITY) }],
      ['f16', { dtype: 'F16', shape: [2], data: Uint16Array.of(0x3c00, 0xc000) }],
      ['bf16', { dtype: 'BF16', shape: [1], data: Uint16Array.of(0x3f80) }],
      ['i64', { dtype: 'I64', shape: [2], data: BigInt64Array.of(-(2n ** 62n), 7n) }],
      ['i32', { dtype: 'I32', shape: [1, 1], data: Int32Array.of(-5) }],
      ['i16', { dtype: 'I16', shape: [1], data: Int16Array.of(-300) }],
      ['i8', { dtype: 'I8', shape: [2], data: Int8Array.of(-1, 1) }],
      ['u8', { dtype: 'U8', shape: [3], data: Uint8Array.of(0, 128, 255) }],
      ['bool', { dtype: 'BOOL', shape: [2], data: Uint8Array.of(1, 0) }],
      ['empty', { dtype: 'F32', shape: [0, 4], data: new Float32Array(0) }],
    ];
    const bytes = encodeSafetensors({ tensors, metadata: { format: 'pt', note: 'soup' } });
    const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(headerLen % 8).toBe(0);
    const back = decodeSafetensors(bytes);
    expect(back.metadata).toEqual({ format: 'pt', note: 'soup' });
    expect([...back.tensors.keys()]).toEqual(tensors.map(([n]) => n));
    for (const [name, t] of tensors) {
      const got = back.tensors.get(name)!;
      expect(got.dtype).toBe(t.dtype);
      expect(got.shape).toEqual(t.shape);
      expect(got.data.constructor).toBe(t.data.constructor);
      expect(
        Buffer.from(got.data.buffer, got.data.byteOffset, got.data.byteLength).equals(
          Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength),
        ),
      ).toBe(true);
    }
    // same input, same bytes: checkpoints of the same state are identical files
    expect(
      Buffer.from(encodeSafetensors({ tensors, metadata: { format: 'pt', note: 'soup' } })).equals(Buffer.from(bytes)),
    ).toBe(true);
  });

  it('round-trips random float32 tensors (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 4 })), {
          minLength: 1,
          maxLength: 5,
        }),
        (shapes) => {
          const tensors: [string, SafetensorsTensor][] = shapes.map(([a, b], i) => [
            `t${i}`,
            { dtype: 'F32', shape: [a, b], data: Float32Array.from({ length: a * b }, (_, j) => j * 0.5 - i) },
          ]);
          const back = decodeSafetensors(encodeSafetensors({ tensors }));
          for (const [name, t] of tensors)
            expect(Array.from(back.tensors.get(name)!.data as Float32Array)).toEqual(
              Array.from(t.data as Float32Array),
            );
        },
      ),
      { numRuns: 50 },
    );
  });

  it('refuses mismatched shapes, wrong arrays and malformed files', () => {
    expect(() =>
      encodeSafetensors({ tensors: [['x', { dtype: 'F32', shape: [3], data: new Float32Array(2) }]] }),
    ).toThrow(/does not match its 2 values/);
    expect(() =>
      encodeSafetensors({ tensors: [['x', { dtype: 'F64', shape: [1], data: new Float32Array(1) }]] }),
    ).toThrow(/needs a Float64Array/);
    const good = encodeSafetensors({ tensors: [['x', { dtype: 'F32', shape: [2], data: Float32Array.of(1, 2) }]] });
    expect(() => decodeSafetensors(good.subarray(0, 4))).toThrow(SafetensorsError);
    expect(() => decodeSafetensors(good.subarray(0, good.length - 1))).toThrow(/outside the 7-byte data section/);
    const trailing = new Uint8Array(good.length + 4);
    trailing.set(good);
    expect(() => decodeSafetensors(trailing)).toThrow(/4 trailing bytes/);
    const hugeHeader = good.slice();
    new DataView(hugeHeader.buffer).setBigUint64(0, 1n << 40n, true);
    expect(() => decodeSafetensors(hugeHeader)).toThrow(/exceeds the file/);
    const overlap = (json: string): Uint8Array => {
      const h = new TextEncoder().encode(json);
      const out = new Uint8Array(8 + h.length + 8);
      new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
      out.set(h, 8);
      return out;
    };
    expect(() =>
      decodeSafetensors(
        overlap(
          '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        ),
      ),
    ).toThrow(/hole or overlap/);
    expect(() => decodeSafetensors(overlap('{"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}}'))).toThrow(
      /unsupported dtype/,
    );
  });
});
