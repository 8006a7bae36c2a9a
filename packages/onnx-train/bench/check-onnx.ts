// Writes the training graphs and validates each with the official ONNX checker
// (`python3 -c "import onnx; onnx.checker.check_model(...)"`, Debian's python3-onnx).
// Not a test: it needs Python. Run: npx tsx bench/check-onnx.ts   (env PYTHON overrides the interpreter)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineGptSpec, writeTrainingModel, type BuildTrainingModelOptions } from '../src/index';

const python = process.env.PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const spec = defineGptSpec({ vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 });
const variants: [string, Omit<BuildTrainingModelOptions, 'spec'>][] = [
  ['train-float32', {}],
  ['train-float32-recompute', { recompute: ['h.0', 'h.1.attn', 'h.2.mlp'] }],
  ['gradients-float64', { mode: 'gradients', dtype: 'float64' }],
  ['loss-float32-untied', { mode: 'loss' }],
];
const dir = mkdtempSync(join(tmpdir(), 'soup-check-onnx-'));
let failed = 0;
try {
  for (const [name, opts] of variants) {
    const s = name.endsWith('untied') ? { ...spec, tieEmbeddings: false } : spec;
    const w = writeTrainingModel({ spec: s, path: join(dir, `${name}.onnx`), ...opts });
    const code = [
      'import sys, onnx',
      'm = onnx.load(sys.argv[1])',
      'onnx.checker.check_model(m, full_check=True)',
      'print("onnx", onnx.__version__, "opset", m.opset_import[0].version, "nodes", len(m.graph.node))',
    ].join('\n');
    const r = spawnSync(python, ['-c', code, w.path], { encoding: 'utf8' });
    const ok = r.status === 0;
    if (!ok) failed++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name.padEnd(26)} ${(w.sizeBytes / 1024).toFixed(0).padStart(5)} KiB  ${(ok ? r.stdout : r.stderr || r.error?.message || '').trim()}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
