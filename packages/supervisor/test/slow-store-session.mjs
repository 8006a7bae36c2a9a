// One supervise() session in its own process (so a test can SIGKILL it with its trainer, as a preempted VM
// does), pushing to a directory store that takes UPLOAD_DELAY_MS after each upload commit: a push slower than
// the trainer's saves. Argument: a JSON object {argv, outputDir, cwd, store, uploadDelayMs, settleMs}.
// Prints each event line and the trainer's stdout; last, RESULT <json>.
import { DirStore } from '@soup/hub-ckpt';
import { supervise } from '@soup/supervisor';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const dir = new DirStore({ root: cfg.store });
const store = Object.assign(Object.create(dir), {
  kind: dir.kind,
  description: dir.description,
  async commit(p) {
    await dir.commit(p);
    if (p.message.startsWith('soup: upload')) await new Promise((r) => setTimeout(r, cfg.uploadDelayMs));
  },
});
const result = await supervise({
  argv: cfg.argv,
  store,
  outputDir: cfg.outputDir,
  cwd: cfg.cwd,
  env: process.env,
  signal: new AbortController().signal,
  settleMs: cfg.settleMs,
  pollMs: 50,
  pushNice: 0,
  onEvent: (e) => process.stdout.write(`${e.line}\n`),
  onStdout: (chunk) => process.stdout.write(chunk),
  onStderr: (chunk) => process.stderr.write(chunk),
});
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
