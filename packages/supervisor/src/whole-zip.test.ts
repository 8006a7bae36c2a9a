import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isWholeZip } from './whole-zip';

/** A one-entry stored zip (crc left 0: the end record is what is judged). */
function zip(data: Buffer): Buffer {
  const name = Buffer.from('data.pkl');
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(name.length, 28);
  const cd = Buffer.concat([central, name]);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(30 + name.length + data.length, 16);
  return Buffer.concat([local, name, data, cd, end]);
}

describe('a file checkpoint proven whole by its zip end record', () => {
  it('whole at every length only when complete: every cut point is refused', () => {
    const dir = useTempDir();
    const whole = zip(Buffer.alloc(300, 7));
    writeFileSync(join(dir, 'w.ckpt'), whole);
    expect(isWholeZip(join(dir, 'w.ckpt'))).toBe(true);
    for (let cut = 0; cut < whole.length; cut++) {
      writeFileSync(join(dir, 'c.ckpt'), whole.subarray(0, cut));
      expect(isWholeZip(join(dir, 'c.ckpt')), `cut at ${cut}`).toBe(false);
    }
    writeFileSync(join(dir, 'json.ckpt'), '{"not": "a zip"}');
    expect(isWholeZip(join(dir, 'json.ckpt'))).toBe(false);
  });
});
