// Evidence that a file checkpoint is whole: torch.save (and so Lightning's .ckpt) writes a zip archive,
// whose end-of-central-directory record is written last and points back at a central directory that
// ends right where it begins. A file cut short by a crash has no such record.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Where a whole zip's central directory is (bytes from the file's start). */
interface CentralDirectory {
  offset: number;
  size: number;
}

/** The central directory of a zip whose end record is consistent, or null (see {@link isWholeZip}). */
function centralDirectory(fd: number, size: number): CentralDirectory | null {
  if (size < 22) return null;
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
      if (z < 0 || z + 56 > tail || buf.readUInt32LE(z) !== 0x06064b50) return null;
      cdSize = Number(buf.readBigUInt64LE(z + 40));
      cdOffset = Number(buf.readBigUInt64LE(z + 48));
      recordAt = z64At;
    } else if (cdOffset === 0xffffffff || cdSize === 0xffffffff) {
      return null;
    }
    return cdOffset + cdSize === recordAt ? { offset: cdOffset, size: cdSize } : null;
  }
  return null;
}

function withFile<T>(path: string, fallback: T, f: (fd: number, size: number) => T): T {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return fallback;
  }
  try {
    return f(fd, fstatSync(fd).size);
  } catch {
    return fallback;
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether `path` is a zip archive that ends with a consistent end-of-central-directory record
 * (central directory offset + size = the record's own offset). False for anything else.
 */
export function isWholeZip(path: string): boolean {
  return withFile(path, false, (fd, size) => centralDirectory(fd, size) !== null);
}

/** The entry names of a whole zip archive (see {@link isWholeZip}); null for anything else. */
export function zipEntryNames(path: string): string[] | null {
  return withFile(path, null, (fd, size) => {
    const cd = centralDirectory(fd, size);
    // A directory larger than this belongs to no checkpoint soup would read names from.
    if (cd === null || cd.size > 64 * 2 ** 20) return null;
    const buf = Buffer.alloc(cd.size);
    readSync(fd, buf, 0, cd.size, cd.offset);
    const names: string[] = [];
    for (let at = 0; at + 46 <= buf.length && buf.readUInt32LE(at) === 0x02014b50; ) {
      const nameLength = buf.readUInt16LE(at + 28);
      const rest = nameLength + buf.readUInt16LE(at + 30) + buf.readUInt16LE(at + 32);
      names.push(buf.subarray(at + 46, at + 46 + nameLength).toString('utf8'));
      at += 46 + rest;
    }
    return names;
  });
}
