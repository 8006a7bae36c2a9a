// supervise() with a trainer command that cannot start, then the corrected one; and a key in the trainer's argv.
import { DirStore, pushCheckpoint } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervisedFingerprint } from './run-identity';
import { supervise, type SuperviseEvent } from './supervise';
import { quickSession } from './_test-session';
import { oneCheckpointTrainer } from './_test-trainer-js';

const KEY = '0123456789abcdef0123456789abcdef01234567';

// Writes checkpoint-1 with its marker and exits 0 at its horizon.
const trainer = oneCheckpointTrainer(1);

describe('[slow] supervise(): a trainer that cannot start, and keys in the argv', { timeout: 60_000 }, () => {
  it('a command that cannot start writes no run record; the fixed one starts fresh, blamed on nothing', async () => {
    const cwd = useTempDir('soup-supervise-launch-');
    const events: SuperviseEvent[] = [];
    const missing = join(cwd, 'bin', 'python4');
    await expect(supervise(quickSession(cwd, [missing, 'train.py', '{output_dir}'], events))).rejects.toThrow(
      /cannot start the trainer ".*python4": ENOENT/,
    );
    expect(existsSync(join(cwd, 'store', 'soup_run.json'))).toBe(false);
    const fixed = await supervise(quickSession(cwd, [process.execPath, '-e', trainer, '{output_dir}'], events));
    expect(fixed).toMatchObject({ outcome: 'complete', step: 1 });
    const record = JSON.parse(readFileSync(join(cwd, 'store', 'soup_run.json'), 'utf8')) as { run: string };
    expect(record.run).toBe(fixed.run);
    expect(events.map((e) => e.line).join('\n')).not.toMatch(/holds no checkpoint of run|differs/);
  });

  it('a key in the argv is masked in printed lines and kept as a sha256 in soup_run.json', async () => {
    const cwd = useTempDir('soup-supervise-key-');
    const events: SuperviseEvent[] = [];
    const argv = [process.execPath, '-e', trainer, '{output_dir}', '--wandb_key', KEY, `--hf-token=plain-${KEY}`];
    const r = await supervise(quickSession(cwd, argv, events));
    expect(r).toMatchObject({ outcome: 'complete', step: 1 });
    const stored = readFileSync(join(cwd, 'store', 'soup_run.json'), 'utf8');
    expect(stored).not.toContain(KEY);
    expect(stored).toMatch(/"--wandb_key",\s*"sha256:[0-9a-f]{64}"/);
    const lines = events.map((e) => e.line).join('\n');
    expect(lines).toContain('--wandb_key *** --hf-token=***');
    expect(lines).not.toContain(KEY);
  });

  it('a run whose record an older soup wrote with the key in plain text resumes as the same run', async () => {
    const cwd = useTempDir('soup-supervise-old-record-');
    const argv = [process.execPath, '-e', trainer, '{output_dir}', '--wandb_key', KEY];
    const oldIdentity = { argv, files: {} };
    const run = supervisedFingerprint(oldIdentity);
    const root = join(cwd, 'store');
    mkdirSync(root);
    writeFileSync(
      join(root, 'soup_run.json'),
      JSON.stringify({ format: 'soup-run/1', run, identity: oldIdentity, accepted: [], batch_size: null }),
    );
    const ck = join(cwd, 'seed', 'checkpoint-1');
    mkdirSync(ck, { recursive: true });
    writeFileSync(join(ck, 'model.safetensors'), 'weights');
    writeFileSync(join(ck, 'trainer_state.json'), JSON.stringify({ global_step: 1, max_steps: 2 }));
    await pushCheckpoint({ store: new DirStore({ root }), step: 1, dir: ck, run });
    const r = await supervise(quickSession(cwd, argv, []));
    expect(r.run).toBe(run);
    expect(readFileSync(join(root, 'soup_run.json'), 'utf8')).not.toContain(KEY);
  });
});

describe('supervise(): the options a caller may leave out', { timeout: 60_000 }, () => {
  // The trainer notes where it ran and one variable of its environment in its checkpoint.
  const noting = `${trainer}
  fs.writeFileSync(path.join(d, 'seen.json'),
    JSON.stringify({ cwd: process.cwd(), v: process.env.SOUP_TEST_INHERITED ?? null }));`;

  it('without cwd, env and signal: the trainer runs in this folder with this environment, to the end', async () => {
    const dir = useTempDir('soup-supervise-defaults-');
    process.env.SOUP_TEST_INHERITED = 'yes';
    try {
      const r = await supervise({
        argv: [process.execPath, '-e', noting, '{output_dir}'],
        store: new DirStore({ root: join(dir, 'store') }),
        outputDir: join(dir, 'out'),
        settleMs: 0,
        pollMs: 50,
        pushNice: 0,
        leaseTtlMs: null,
      });
      expect(r).toMatchObject({ outcome: 'complete', step: 1 });
      expect(JSON.parse(readFileSync(join(dir, 'out', 'checkpoint-1', 'seen.json'), 'utf8'))).toEqual({
        cwd: process.cwd(),
        v: 'yes',
      });
    } finally {
      delete process.env.SOUP_TEST_INHERITED;
    }
  });

  it('a relative outputDir is read against cwd', async () => {
    const cwd = useTempDir('soup-supervise-relative-');
    const r = await supervise({
      ...quickSession(cwd, [process.execPath, '-e', noting, '{output_dir}'], []),
      outputDir: 'out',
    });
    expect(r).toMatchObject({ outcome: 'complete', step: 1 });
    expect(JSON.parse(readFileSync(join(cwd, 'out', 'checkpoint-1', 'seen.json'), 'utf8')).cwd).toBe(cwd);
    expect(existsSync(join(cwd, 'store', 'latest.json'))).toBe(true);
  });
});
