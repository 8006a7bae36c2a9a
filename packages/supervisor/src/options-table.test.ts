// docs/supervise-options.md lists every field of SuperviseOptions: a field added to the interface without a row
// there fails here, naming it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const here = import.meta.dirname;
const source = readFileSync(join(here, 'supervise-options.ts'), 'utf8');
const table = readFileSync(join(here, '..', '..', '..', 'docs', 'supervise-options.md'), 'utf8');

/** The interface's own fields: lines indented by exactly two spaces, `name:` or `name?:`. */
function fieldsOf(name: string): string[] {
  const start = source.indexOf(`export interface ${name} {`);
  const end = source.indexOf('\n}\n', start);
  return [...source.slice(start, end).matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((m) => m[1]!);
}

describe('the options table', () => {
  it('has one row per field of SuperviseOptions, in its order', () => {
    const fields = fieldsOf('SuperviseOptions');
    expect(fields.length).toBeGreaterThan(40);
    const rows = [...table.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]!);
    expect(rows).toEqual(fields);
  });
});
