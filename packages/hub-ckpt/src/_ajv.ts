import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import manifestSchemaJson from './schemas/manifest.schema.json';
import pointerSchemaJson from './schemas/pointer.schema.json';

let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();

function validator(name: 'pointer' | 'manifest'): ValidateFunction {
  let fn = compiled.get(name);
  if (!fn) {
    ajv ??= new Ajv({ allErrors: true, strict: true });
    fn = ajv.compile(name === 'pointer' ? pointerSchemaJson : manifestSchemaJson);
    compiled.set(name, fn);
  }
  return fn;
}

/** Validates against a shipped schema; returns readable error lines (empty when valid). */
export function schemaErrors(name: 'pointer' | 'manifest', value: unknown): string[] {
  const fn = validator(name);
  if (fn(value)) return [];
  return (fn.errors ?? []).map((e) => formatError(name, e));
}

function formatError(name: string, e: ErrorObject): string {
  const where = e.instancePath === '' ? name : `${name}${e.instancePath.replace(/\//g, '.')}`;
  if (e.keyword === 'additionalProperties') return `${where}: unknown field "${String(e.params.additionalProperty)}"`;
  if (e.keyword === 'required') return `${where}: missing field "${String(e.params.missingProperty)}"`;
  return `${where}: ${e.message ?? e.keyword}`;
}
