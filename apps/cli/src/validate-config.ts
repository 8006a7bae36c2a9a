import pathModule from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import schemaJson from '../assets/soup.schema.json';
import { didYouMean } from './did-you-mean';
import type { ConfigIssue } from './errors';
import { parseBytes } from './parse-bytes';
import { parseDuration } from './parse-duration';
import { divisorsOf } from '@soup/batch-probe';
import { oldBatchAuto, parsePercent } from './_batch-config';

/** A gradient checkpointing setting as written in soup.yaml. */
export type GradCkptSetting = boolean | null | 'full' | 'medium' | 'selective' | 'auto' | 'budget';

/** soup.yaml after validation, defaults filled, paths resolved. */
export interface SoupConfig {
  /** Absolute path of the soup.yaml this came from. */
  file: string;
  base: string;
  model: {
    vocabSize: number;
    dModel: number;
    nHeads: number;
    nLayers: number;
    dFF: number;
    tieEmbeddings: boolean;
  };
  data: {
    /** Absolute path of the training text. */
    trainPath: string;
    /** Absolute path of the validation text, or null. */
    valPath: string | null;
    maxLength: number;
  };
  training: {
    steps: number;
    /** G: sequences per optimizer step (fixed for the run, part of its fingerprint). */
    batchSize: number;
    /** m: sequences per forward/backward, a divisor of batchSize; auto: the largest that fits. */
    microBatchSize: 'auto' | number;
    /** Fraction of the budget a micro-batch's measured peak must leave free (0: none). */
    memoryHeadroom: number;
    autoBatchSizeStrategy: 'auto' | 'probe' | 'static';
    staticBatchSize: number;
    lr: number;
    warmupSteps: number;
    weightDecay: number;
    gradClip: number;
    seed: number;
    valBatches: number;
    threads: number;
    memoryBudgetBytes: number | null;
    gradientCheckpointing: GradCkptSetting;
    activationOffloading: 'cpu' | 'disk' | 'auto' | null;
    /** Absolute scratch directory for disk offload, or null (the CLI picks one under the output dir). */
    activationOffloadingDir: string | null;
    quantization: 'none' | '4bit' | '8bit';
    loraR: number;
    /** `time_limit` in ms: each session ends (saving and pushing its step) after this long; null for none. */
    timeLimitMs: number | null;
  };
  device: { kind: 'cpu' | 'cuda'; id: number; spec: string };
  hub: {
    repo: string | null;
    repoType: 'model' | 'dataset';
    private: boolean;
    pushEverySteps: number | null;
    keepLocal: number;
    keepRemote: number | null;
    /** Squash the Hub repo's history after a push that pruned (hub.squash_history). */
    squashHistory: boolean;
    /** hub.lease_ttl in ms. */
    leaseTtlMs: number;
    endpoint: string | null;
  };
  /** Absolute output directory. */
  output: string;
  /** Line (1-based) of every field written in the file, by dotted path, for later error messages. */
  lines: Record<string, number>;
}

/** Options of {@link validateConfig}. */
export interface ValidateConfigOptions {
  /** The YAML text. */
  text: string;
  /** Absolute path of the file (data paths resolve against its folder). */
  file: string;
  /** Directory `output` and the offload dir resolve against. @default process.cwd() */
  cwd?: string;
  /**
   * Checks that a data file exists (absolute path in, true when it is a readable file).
   * @default no check
   */
  isFile?: (absPath: string) => boolean;
}

/** What {@link validateConfig} found. `config` is set only when there are no errors. */
export interface ValidateConfigResult {
  config: SoupConfig | null;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  anyOf?: Schema[];
  'x-allowed'?: string;
  default?: unknown;
};

const schema = schemaJson as unknown as Schema;
let compiled: ReturnType<Ajv['compile']> | undefined;

function validator(): ReturnType<Ajv['compile']> {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: true, verbose: true, useDefaults: true, strict: true, strictTypes: false });
    ajv.addKeyword({ keyword: 'x-allowed', schemaType: 'string' });
    compiled = ajv.compile(schemaJson);
  }
  return compiled;
}

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

function fieldLines(doc: Document, lc: LineCounter): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (node: unknown, prefix: string): void => {
    if (!isMap(node)) return;
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue;
      const path = prefix ? `${prefix}.${String(pair.key.value)}` : String(pair.key.value);
      const range = (pair.key as Node).range;
      if (range) out[path] = lc.linePos(range[0]).line;
      walk(pair.value, path);
    }
  };
  walk(doc.contents, '');
  return out;
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

function segmentsOf(instancePath: string): string[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function schemaAt(segments: readonly string[]): Schema | undefined {
  let s: Schema | undefined = schema;
  for (const seg of segments) {
    s = s?.properties?.[seg];
    if (!s) return undefined;
  }
  return s;
}

/** Position of a field: its key when `onKey`, else its value; falls back to the nearest ancestor. */
function locate(
  doc: Document,
  lc: LineCounter,
  segments: readonly string[],
  onKey: boolean,
): { line?: number; col?: number } {
  for (let n = segments.length; n >= 0; n--) {
    const parentSegs = segments.slice(0, Math.max(0, n - 1));
    const last = segments[n - 1];
    if (last === undefined) {
      const range = (doc.contents as Node | null)?.range;
      return range ? lc.linePos(range[0]) : { line: 1 };
    }
    const parent = parentSegs.length === 0 ? doc.contents : doc.getIn(parentSegs, true);
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === last);
    if (!pair) continue;
    const node = (onKey && n === segments.length ? pair.key : (pair.value ?? pair.key)) as Node | null;
    const range = node?.range ?? (pair.key as Node | null)?.range;
    if (range) return lc.linePos(range[0]);
  }
  return {};
}

function got(v: unknown): string {
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

/** Every known dotted path of the schema, for cross-section suggestions. */
function allPaths(s: Schema = schema, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, sub] of Object.entries(s.properties ?? {})) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p, ...allPaths(sub, p));
  }
  return out;
}

function describeErrors(errs: ErrorObject[], doc: Document, lc: LineCounter, data: unknown): ConfigIssue[] {
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
        message: `missing required field${sub?.['x-allowed'] ? ` (${sub['x-allowed']})` : ''}${segs.length ? ` under ${segs.join('.')}` : ''}`,
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
        message = `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')} (got ${got(value)})${hint ? `; did you mean "${hint}"?` : ''}`;
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

function semanticChecks(
  data: Record<string, unknown>,
  doc: Document,
  lc: LineCounter,
  errors: ConfigIssue[],
  warnings: ConfigIssue[],
  opts: ValidateConfigOptions,
): void {
  if (opts.isFile) {
    const d = data.data as Record<string, unknown>;
    for (const key of ['train', 'val'] as const) {
      const rel = d[key];
      if (typeof rel !== 'string') continue;
      const abs = pathModule.resolve(pathModule.dirname(opts.file), rel);
      if (!opts.isFile(abs)) {
        errors.push({
          path: `data.${key}`,
          ...locate(doc, lc, ['data', key], false),
          message: `no such file: ${abs} (paths are relative to ${pathModule.basename(opts.file)}'s folder)`,
        });
      }
    }
  }
  const model = data.model as Record<string, number>;
  const training = data.training as Record<string, unknown>;
  const dModel = model.d_model!;
  const nHeads = model.n_heads!;
  if (dModel % nHeads !== 0) {
    errors.push({
      path: 'model.n_heads',
      ...locate(doc, lc, ['model', 'n_heads'], false),
      message: `must divide model.d_model (${dModel} is not a multiple of ${nHeads}); e.g. ${[1, 2, 4, 8, 16].filter((h) => dModel % h === 0).pop() ?? 1}`,
    });
  }
  const budget = training.memory_budget;
  if (budget !== undefined && budget !== null && parseBytes(budget as string | number) === undefined) {
    errors.push({
      path: 'training.memory_budget',
      ...locate(doc, lc, ['training', 'memory_budget'], false),
      message: `must be a size like 6GiB or 512MiB (got ${got(budget)})`,
    });
  }
  const limit = training.time_limit;
  if (limit !== undefined && limit !== null && parseDuration(String(limit)) === undefined) {
    errors.push({
      path: 'training.time_limit',
      ...locate(doc, lc, ['training', 'time_limit'], false),
      message: `must be a duration like 8h45m, 90m or 45s (got ${got(limit)})`,
    });
  }
  const hubSection = data.hub as Record<string, unknown> | undefined;
  const ttl = hubSection?.lease_ttl;
  if (ttl !== undefined && (parseDuration(String(ttl)) ?? 0) < 1000) {
    errors.push({
      path: 'hub.lease_ttl',
      ...locate(doc, lc, ['hub', 'lease_ttl'], false),
      message: `must be a duration of at least 1 s, like 10m or 90s (got ${got(ttl)})`,
    });
  }
  if (training.gradient_checkpointing === 'budget' && (budget === undefined || budget === null)) {
    errors.push({
      path: 'training.gradient_checkpointing',
      ...locate(doc, lc, ['training', 'gradient_checkpointing'], false),
      message:
        'budget needs training.memory_budget (e.g. memory_budget: 2GiB), the memory the recompute set must fit in',
    });
  }
  const bs = training.batch_size as number;
  const micro = training.micro_batch_size;
  if (typeof micro === 'number' && bs % micro !== 0) {
    const divs = divisorsOf(bs).filter((d) => d <= micro);
    errors.push({
      path: 'training.micro_batch_size',
      ...locate(doc, lc, ['training', 'micro_batch_size'], false),
      message: `must divide batch_size (${bs}), so that micro_batch_size × accumulation = batch_size; e.g. ${divs.at(-1) ?? 1}, or auto`,
    });
  }
  if (training.auto_batch_size_strategy !== 'auto' && micro !== 'auto' && data.training) {
    warnings.push({
      path: 'training.auto_batch_size_strategy',
      ...locate(doc, lc, ['training', 'auto_batch_size_strategy'], false),
      message: `has no effect: micro_batch_size is ${String(micro)}, not auto`,
    });
  }
  const headroom = training.memory_headroom;
  if (typeof headroom === 'string' && parsePercent(headroom)! >= 1) {
    errors.push({
      path: 'training.memory_headroom',
      ...locate(doc, lc, ['training', 'memory_headroom'], false),
      message: `must be below 100% (got ${got(headroom)})`,
    });
  }
  const lora = training.lora as { r?: number } | undefined;
  if (training.quantization !== 'none' || (lora?.r ?? 0) > 0) {
    warnings.push({
      path: training.quantization !== 'none' ? 'training.quantization' : 'training.lora.r',
      ...locate(
        doc,
        lc,
        training.quantization !== 'none' ? ['training', 'quantization'] : ['training', 'lora', 'r'],
        false,
      ),
      message:
        "is a batch-cache key field only: soup train trains the full float32 model (quantization none, lora.r 0); soup probe --exec passes it to your trainer's cache key",
    });
  }
}

function toConfig(d: Record<string, unknown>, opts: ValidateConfigOptions): Omit<SoupConfig, 'lines'> {
  const { dirname, resolve } = pathModule;
  const dir = dirname(opts.file);
  const cwd = opts.cwd ?? process.cwd();
  const model = d.model as Record<string, number | boolean>;
  const data = d.data as Record<string, unknown>;
  const t = d.training as Record<string, unknown>;
  const hub = d.hub as Record<string, unknown>;
  const device = String(d.device);
  const [kind, id] = device.split(':') as ['cpu' | 'cuda', string | undefined];
  const budget = t.memory_budget;
  return {
    file: opts.file,
    base: String(d.base),
    model: {
      vocabSize: model.vocab_size as number,
      dModel: model.d_model as number,
      nHeads: model.n_heads as number,
      nLayers: model.n_layers as number,
      dFF: model.d_ff as number,
      tieEmbeddings: model.tie_embeddings as boolean,
    },
    data: {
      trainPath: resolve(dir, String(data.train)),
      valPath: data.val === null || data.val === undefined ? null : resolve(dir, String(data.val)),
      maxLength: data.max_length as number,
    },
    training: {
      steps: t.steps as number,
      batchSize: t.batch_size as number,
      microBatchSize: t.micro_batch_size as 'auto' | number,
      memoryHeadroom:
        t.memory_headroom === undefined || t.memory_headroom === null
          ? 0
          : typeof t.memory_headroom === 'number'
            ? t.memory_headroom
            : (parsePercent(String(t.memory_headroom)) ?? 0),
      autoBatchSizeStrategy: t.auto_batch_size_strategy as 'auto' | 'probe' | 'static',
      staticBatchSize: t.static_batch_size as number,
      lr: t.lr as number,
      warmupSteps: t.warmup_steps as number,
      weightDecay: t.weight_decay as number,
      gradClip: t.grad_clip as number,
      seed: t.seed as number,
      valBatches: t.val_batches as number,
      threads: t.threads as number,
      memoryBudgetBytes:
        budget === undefined || budget === null ? null : (parseBytes(budget as string | number) ?? null),
      gradientCheckpointing: (t.gradient_checkpointing ?? false) as GradCkptSetting,
      activationOffloading: (t.activation_offloading ?? null) as 'cpu' | 'disk' | 'auto' | null,
      activationOffloadingDir: t.activation_offloading_dir ? resolve(cwd, String(t.activation_offloading_dir)) : null,
      quantization: t.quantization as 'none' | '4bit' | '8bit',
      loraR: (t.lora as { r: number }).r,
      timeLimitMs:
        t.time_limit === undefined || t.time_limit === null ? null : (parseDuration(String(t.time_limit)) ?? null),
    },
    device: { kind, id: id === undefined ? 0 : Number(id), spec: device },
    hub: {
      repo: (hub.repo as string | undefined) ?? null,
      repoType: hub.repo_type as 'model' | 'dataset',
      private: hub.private as boolean,
      pushEverySteps: (hub.push_every_steps as number | undefined) ?? null,
      keepLocal: hub.keep_local as number,
      keepRemote: hub.keep_remote === undefined ? 3 : (hub.keep_remote as number | null),
      squashHistory: hub.squash_history === true,
      leaseTtlMs: hub.lease_ttl === undefined ? 600_000 : (parseDuration(String(hub.lease_ttl)) ?? 600_000),
      endpoint: (hub.endpoint as string | undefined) ?? null,
    },
    output: resolve(cwd, String(d.output)),
  };
}
