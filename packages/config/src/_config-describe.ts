// The schema's errors, told the way a person reads them: the field path, its YAML line, what is
// allowed there, and a "did you mean" for an unknown key or a mistyped value.
import type { ErrorObject } from 'ajv';
import type { Document, LineCounter } from 'yaml';
import { allPaths, schemaAt } from './_config-schema';
import { locate } from './_config-lines';
import { didYouMean } from './did-you-mean';
import type { ConfigIssue } from './errors';

function segmentsOf(instancePath: string): string[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A value as a message shows it, shortened. */
export function got(v: unknown): string {
  const s = v === undefined ? 'nothing' : JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

function article(type: string): string {
  const names: Record<string, string> = {
    integer: 'an integer',
    number: 'a number',
    string: 'a string',
    boolean: 'true or false',
    object: 'a mapping',
    array: 'a list',
    null: 'null',
  };
  return names[type] ?? type;
}

function valueAt(data: unknown, segments: readonly string[]): unknown {
  let v: unknown = data;
  for (const s of segments) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[s] : undefined;
  return v;
}

export function describeErrors(errs: ErrorObject[], doc: Document, lc: LineCounter, data: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const valueErrors = new Map<string, ErrorObject[]>();
  for (const e of errs) {
    const segs = segmentsOf(e.instancePath);
    if (e.keyword === 'additionalProperties') {
      const key = String((e.params as { additionalProperty: string }).additionalProperty);
      const fieldSegs = [...segs, key];
      const allowed = Object.keys(schemaAt(segs)?.properties ?? {});
      let hint = didYouMean({ input: key, candidates: allowed });
      let hintText = hint ? `did you mean "${hint}"?` : '';
      if (!hint) {
        const elsewhere = allPaths().filter((p) => p.split('.').pop() === key);
        if (elsewhere.length > 0) hintText = `did you mean ${elsewhere.map((p) => `"${p}"`).join(' or ')}?`;
        else {
          const near = didYouMean({ input: key, candidates: allPaths().map((p) => p.split('.').pop()!) });
          const full = near ? allPaths().find((p) => p.split('.').pop() === near) : undefined;
          if (full) {
            hint = full;
            hintText = `did you mean "${full}"?`;
          }
        }
      }
      issues.push({
        path: fieldSegs.join('.'),
        ...locate(doc, lc, fieldSegs, true),
        message: `unknown field; ${hintText || `allowed here: ${allowed.join(', ')}`}`,
      });
      continue;
    }
    if (e.keyword === 'required') {
      const key = String((e.params as { missingProperty: string }).missingProperty);
      const sub = schemaAt([...segs, key]);
      issues.push({
        path: [...segs, key].join('.'),
        ...locate(doc, lc, segs, true),
        message:
          `missing required field${sub?.['x-allowed'] ? ` (${sub['x-allowed']})` : ''}` +
          `${segs.length ? ` under ${segs.join('.')}` : ''}`,
      });
      continue;
    }
    const list = valueErrors.get(e.instancePath) ?? [];
    list.push(e);
    valueErrors.set(e.instancePath, list);
  }
  for (const [instancePath, list] of valueErrors) {
    const segs = segmentsOf(instancePath);
    const sub = schemaAt(segs);
    const value = valueAt(data, segs);
    const pos = locate(doc, lc, segs, false);
    const path = segs.join('.');
    if (sub?.['x-allowed']) {
      issues.push({ path, ...pos, message: `must be ${sub['x-allowed']} (got ${got(value)})` });
      continue;
    }
    const e = list[0]!;
    let message: string;
    switch (e.keyword) {
      case 'enum': {
        const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
        const hint =
          typeof value === 'string' ? didYouMean({ input: value, candidates: allowed.map(String) }) : undefined;
        message =
          `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')} (got ${got(value)})` +
          `${hint ? `; did you mean "${hint}"?` : ''}`;
        break;
      }
      case 'type': {
        const t = (e.params as { type: string | string[] }).type;
        const types = Array.isArray(t) ? t : String(t).split(',');
        message = `must be ${types.map(article).join(' or ')} (got ${got(value)})`;
        break;
      }
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const p = e.params as { comparison: string; limit: number };
        message = `must be ${p.comparison} ${p.limit} (got ${got(value)})`;
        break;
      }
      case 'minLength':
        message = `must not be empty`;
        break;
      default:
        message = `${e.message ?? 'is not allowed'} (got ${got(value)})`;
    }
    issues.push({ path, ...pos, message });
  }
  return issues;
}
