import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ConfigError } from './errors';
import { loadConfig } from './load-config';

describe('loadConfig', () => {
  it('a data.train that is a directory is refused as a directory, not as a missing file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'soup-config-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'data'));
    writeFileSync(
      join(dir, 'soup.yaml'),
      'base: soup/tiny-gpt\ndata:\n  train: data\n  max_length: 64\ntraining:\n  steps: 10\n',
    );
    let err: unknown;
    try {
      loadConfig({ cwd: dir });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([
      expect.objectContaining({
        path: 'data.train',
        message: `${join(dir, 'data')} is a directory: data.train names one UTF-8 text file`,
      }),
    ]);
  });
});
