// The templates `soup init` writes and the bundled example are valid soup.yaml files (@soup/config owns the schema).
import { readFileSync } from 'node:fs';
import { validateConfig } from '@soup/config';
import { describe, expect, it } from 'vitest';
import { assetPath } from './_assets';

describe('validateConfig', () => {
  it('accepts both bundled templates and the example', async () => {
    for (const name of ['templates/tiny.yaml', 'templates/small.yaml', '../examples/soup.yaml']) {
      const r = validateConfig({ text: readFileSync(assetPath(name), 'utf8'), file: assetPath(name) });
      expect(r.errors, name).toEqual([]);
      expect(r.warnings, name).toEqual([]);
    }
  });
});
