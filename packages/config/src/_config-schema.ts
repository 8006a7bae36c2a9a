// soup.yaml's JSON Schema (assets/soup.schema.json): the compiled ajv validator and the walks over
// the schema the error messages need (the schema of a field, every known field path).
import { Ajv } from 'ajv';
import schemaJson from '../assets/soup.schema.json';

export type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  anyOf?: Schema[];
  'x-allowed'?: string;
  default?: unknown;
};

export const schema = schemaJson as unknown as Schema;
let compiled: ReturnType<Ajv['compile']> | undefined;

export function validator(): ReturnType<Ajv['compile']> {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: true, verbose: true, useDefaults: true, strict: true, strictTypes: false });
    ajv.addKeyword({ keyword: 'x-allowed', schemaType: 'string' });
    compiled = ajv.compile(schemaJson);
  }
  return compiled;
}

export function schemaAt(segments: readonly string[]): Schema | undefined {
  let s: Schema | undefined = schema;
  for (const seg of segments) {
    s = s?.properties?.[seg];
    if (!s) return undefined;
  }
  return s;
}

/** Every known dotted path of the schema, for cross-section suggestions. */
export function allPaths(s: Schema = schema, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, sub] of Object.entries(s.properties ?? {})) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p, ...allPaths(sub, p));
  }
  return out;
}
