// Evidence that a file checkpoint is whole: torch.save (and so Lightning's .ckpt) writes a zip archive,
// whose end-of-central-directory record is written last and points back at a central directory that
// ends right where it begins. A file cut short by a crash has no such record.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * Whether `path` is a zip archive that ends with a consistent end-of-central-directory record
 * (central directory offset + size = the record's own offset). False for anything else.
 */
export function isWholeZip(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    const size = fstatSync(fd).size;
    if (size < 22) return false;
    const tail = Math.min(size, 22 + 65_535 + 20 + 56);
    const buf = Buffer.alloc(tail);
    readSync(fd, buf, 0, tail, size - tail);
    for (let i = tail - 22; i >= 0; i--) {
      if (buf.readUInt32LE(i) !== 0x06054b50) continue;
      const commentLength = buf.readUInt16LE(i + 20);
      if (i + 22 + commentLength !== tail) continue;
      const eocdAt = size - tail + i;
      let cdSize = buf.readUInt32LE(i + 12);
      let cdOffset = buf.readUInt32LE(i + 16);
      let recordAt = eocdAt;
      const loc = i - 20;
      if (loc >= 0 && buf.readUInt32LE(loc) === 0x07064b50) {
        // zip64 (torch.save writes one even for small files): the locator names the zip64 end record,
        // which the central directory ends at, and which holds the 64-bit size and offset.
        const z64At = Number(buf.readBigUInt64LE(loc + 8));
        const z = z64At - (size - tail);
        if (z < 0 || z + 56 > tail || buf.readUInt32LE(z) !== 0x06064b50) return false;
        cdSize = Number(buf.readBigUInt64LE(z + 40));
        cdOffset = Number(buf.readBigUInt64LE(z + 48));
        recordAt = z64At;
      } else if (cdOffset === 0xffffffff || cdSize === 0xffffffff) {
        return false;
      }
      return cdOffset + cdSize === recordAt;
    }
    return false;
  } finally {
    closeSync(fd);
  }
}
