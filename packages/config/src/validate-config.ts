import { LineCounter, parseDocument } from 'yaml';
import { oldBatchAuto } from './_batch-config';
import { describeErrors } from './_config-describe';
import { fieldLines } from './_config-lines';
import { validator } from './_config-schema';
import { semanticChecks } from './_config-semantic';
import { toConfig } from './_to-soup-config';
import type { ConfigIssue } from './errors';
import type { ValidateConfigOptions, ValidateConfigResult } from './soup-config';

export type { GradCkptSetting, SoupConfig, ValidateConfigOptions, ValidateConfigResult } from './soup-config';

/**
 * Validates soup.yaml text against the JSON Schema (assets/soup.schema.json) and the rules a schema
 * cannot say (heads divide the width, ...). Every issue names the field path, the YAML line and what
 * is allowed; an unknown key gets a "did you mean". Does not throw and does no I/O.
 */
export function validateConfig(opts: ValidateConfigOptions): ValidateConfigResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(opts.text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  for (const e of doc.errors) {
    const pos = lineCounter.linePos(e.pos[0]);
    errors.push({ path: '', line: pos.line, col: pos.col, message: `not valid YAML: ${firstLine(e.message)}` });
  }
  if (errors.length > 0) return { config: null, errors, warnings };
  for (const w of doc.warnings) {
    const pos = lineCounter.linePos(w.pos[0]);
    warnings.push({ path: '', line: pos.line, col: pos.col, message: firstLine(w.message) });
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) {
    errors.push({ path: '', line: 1, message: 'the file is empty; run `soup init` to write a commented soup.yaml' });
    return { config: null, errors, warnings };
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    errors.push({
      path: '',
      line: 1,
      message: 'must be a mapping of fields (base, model, data, training, device, hub, output)',
    });
    return { config: null, errors, warnings };
  }
  const data = value as Record<string, unknown>;
  // Optional sections: present as {} so the schema's defaults apply inside them.
  for (const k of ['model', 'hub'] as const) if (data[k] === undefined || data[k] === null) data[k] = {};
  const training = data.training;
  if (training && typeof training === 'object' && !Array.isArray(training)) {
    const t = training as Record<string, unknown>;
    if (t.lora === undefined || t.lora === null) t.lora = {};
  }
  const oldAuto = oldBatchAuto(data, doc, lineCounter);
  if (oldAuto) errors.push(oldAuto);
  const validate = validator();
  if (!validate(data)) {
    errors.push(...describeErrors(validate.errors ?? [], doc, lineCounter, data));
  }
  if (errors.length === 0) semanticChecks(data, doc, lineCounter, errors, warnings, opts);
  errors.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.col ?? 0) - (b.col ?? 0));
  if (errors.length > 0) return { config: null, errors, warnings };
  return { config: { ...toConfig(data, opts), lines: fieldLines(doc, lineCounter) }, errors, warnings };
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
