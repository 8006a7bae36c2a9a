// A small PNG decoder (8-bit RGB/RGBA/grey, non-interlaced) on node:zlib: enough to look at a screenshot of a
// rendered plot (a headless browser's) without an image library.
import { inflateSync } from 'node:zlib';
import { PngUnsupportedError } from './errors';

/** A decoded image: RGBA, 4 bytes per pixel, row-major. */
export interface DecodedPng {
  width: number;
  height: number;
  rgba: Uint8Array;
}

/**
 * Decodes the PNG `bytes`; throws a {@link PngUnsupportedError} on what it does not support (16-bit, palette,
 * interlace).
 */
export function decodePng(bytes: Uint8Array): DecodedPng {
  const buf = Buffer.from(bytes);
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new PngUnsupportedError('not a PNG');
  let off = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('ascii', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const colour = data[9];
      if (depth !== 8 || data[12] !== 0)
        throw new PngUnsupportedError(`unsupported PNG: depth ${depth}, interlace ${data[12]}`);
      channels = colour === 6 ? 4 : colour === 2 ? 3 : colour === 0 ? 1 : colour === 4 ? 2 : 0;
      if (channels === 0) throw new PngUnsupportedError(`unsupported PNG colour type ${colour}`);
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      const p = a + b - c;
      const pa = Math.abs(p - a);
      const pb = Math.abs(p - b);
      const pc = Math.abs(p - c);
      const pred =
        filter === 0
          ? 0
          : filter === 1
            ? a
            : filter === 2
              ? b
              : filter === 3
                ? (a + b) >> 1
                : pa <= pb && pa <= pc
                  ? a
                  : pb <= pc
                    ? b
                    : c;
      pixels[y * stride + x] = (line[x]! + pred) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const s = pixels.subarray(i * channels, (i + 1) * channels);
    const [r, g, b, al] =
      channels >= 3
        ? [s[0]!, s[1]!, s[2]!, channels === 4 ? s[3]! : 255]
        : [s[0]!, s[0]!, s[0]!, channels === 2 ? s[1]! : 255];
    rgba.set([r, g, b, al], i * 4);
  }
  return { width, height, rgba };
}
