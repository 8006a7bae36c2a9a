// Writes the training graphs and validates each with the official ONNX checker
// (`python3 -c "import onnx; onnx.checker.check_model(...)"`, Debian's python3-onnx).
// Not a test: it needs Python. Run: npx tsx bench/check-onnx.ts   (env PYTHON overrides the interpreter)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as seg from '../src/_segments';
import { buildSwitchModel } from '../src/_switch-model';
import {
  defineGptSpec,
  resolveAdamW,
  writeTrainingModel,
  type BuildTrainingModelOptions,
  type GptSpec,
} from '../src/index';

/** The segmented step's model (every segment behind an If), as SegmentedTrainStep builds it. */
function writeSegmentsModel(spec: GptSpec, recompute: string[], path: string): { path: string; sizeBytes: number } {
  const models: seg.SegmentModel[] = [];
  const kinds = new Set<seg.UnitKind>();
  for (let i = 0; i < spec.nLayers; i++) {
    for (const kind of seg.blockUnits(recompute, i)) {
      if (kinds.has(kind)) continue;
      kinds.add(kind);
      const u = seg.buildUnitSegments(spec, 'float32', kind);
      models.push(u.forward, u.backward);
    }
  }
  const adamw = resolveAdamW();
  models.push(
    seg.buildEmbedForward(spec, 'float32'),
    seg.buildEmbedBackward(spec, 'float32'),
    seg.buildHead(spec, 'float32'),
  );
  models.push(
    seg.buildGradNorm(spec, 'float32'),
    seg.buildAdamWGroup(spec, 'float32', adamw, 'block'),
    seg.buildAdamWGroup(spec, 'float32', adamw, 'rest'),
  );
  const { bytes } = buildSwitchModel('float32', models);
  writeFileSync(path, bytes);
  return { path, sizeBytes: bytes.byteLength };
}

const python = process.env.PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const spec = defineGptSpec({ vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 });
const variants: [string, Omit<BuildTrainingModelOptions, 'spec'>][] = [
  ['train-float32', {}],
  ['train-float32-recompute', { recompute: ['h.0', 'h.1.attn', 'h.2.mlp'] }],
  ['gradients-float64', { mode: 'gradients', dtype: 'float64' }],
  ['loss-float32-untied', { mode: 'loss' }],
  ['segments-float32', {}],
  ['segments-float32-recompute', { recompute: ['h.0', 'h.1.attn', 'h.2.mlp'] }],
];
const dir = mkdtempSync(join(tmpdir(), 'soup-check-onnx-'));
let failed = 0;
try {
  for (const [name, opts] of variants) {
    const s = name.endsWith('untied') ? { ...spec, tieEmbeddings: false } : spec;
    const path = join(dir, `${name}.onnx`);
    const w = name.startsWith('segments')
      ? writeSegmentsModel(s, opts.recompute ? [...opts.recompute] : [], path)
      : writeTrainingModel({ spec: s, path, ...opts });
    const code = [
      'import sys, onnx',
      'm = onnx.load(sys.argv[1])',
      'onnx.checker.check_model(m, full_check=True)',
      'print("onnx", onnx.__version__, "opset", m.opset_import[0].version, "nodes", len(m.graph.node))',
    ].join('\n');
    const r = spawnSync(python, ['-c', code, w.path], { encoding: 'utf8' });
    const ok = r.status === 0;
    if (!ok) failed++;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${name.padEnd(26)} ${(w.sizeBytes / 1024).toFixed(0).padStart(5)} KiB  ` +
        `${(ok ? r.stdout : r.stderr || r.error?.message || '').trim()}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
