import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodePng } from './decode-png';
import { LossPlotError, PngUnsupportedError } from './errors';

/** A PNG of `width`×`height` 8-bit pixels of `channels` (colour type `colour`), every row unfiltered. */
function png(width: number, height: number, colour: number, pixels: number[], depth = 8): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    return Buffer.concat([len, Buffer.from(type, 'ascii'), data, Buffer.alloc(4)]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = depth;
  ihdr[9] = colour;
  const stride = pixels.length / height;
  const raw = Buffer.concat(
    Array.from({ length: height }, (_, y) => Buffer.from([0, ...pixels.slice(y * stride, (y + 1) * stride)])),
  );
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('decodePng', () => {
  it('decodes RGB and grey pixels to RGBA', () => {
    expect(decodePng(png(2, 1, 2, [255, 0, 0, 0, 0, 255]))).toEqual({
      width: 2,
      height: 1,
      rgba: new Uint8Array([255, 0, 0, 255, 0, 0, 255, 255]),
    });
    expect([...decodePng(png(1, 2, 0, [7, 9])).rgba]).toEqual([7, 7, 7, 255, 9, 9, 9, 255]);
  });

  it('refuses what it does not read with a PngUnsupportedError', () => {
    const cases: [Uint8Array, RegExp][] = [
      [Buffer.from('GIF89a..'), /not a PNG/],
      [png(1, 1, 2, [1, 2, 3], 16), /depth 16/],
      [png(1, 1, 3, [0]), /colour type 3/],
    ];
    for (const [bytes, message] of cases) {
      const err = (() => {
        try {
          decodePng(bytes);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(PngUnsupportedError);
      expect(err).toBeInstanceOf(LossPlotError);
      expect((err as PngUnsupportedError).code).toBe('SOUP_LOSS_PLOT_PNG_UNSUPPORTED');
      expect((err as Error).message).toMatch(message);
    }
  });
});
