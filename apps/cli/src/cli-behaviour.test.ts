// The CLI as people expect it, through the real bin: a closed stdout (`| head -1`), bare commands,
// unknown subcommands, required options.
import { runNode, useTempDir } from '@soup/test-utils';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { assetPath } from './_assets';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const baseEnv = (cwd: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: cwd,
  NO_COLOR: '1',
  SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'),
});

function soup(args: string[], cwd: string) {
  return runNode([bin, ...args], { cwd, env: baseEnv(cwd), timeoutMs: 60_000 });
}

/** `soup <args> | head -1`: reads the first line of stdout, then closes the pipe's read end. */
function soupHeadOne(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; first: string; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { cwd, env: baseEnv(cwd), stdio: ['ignore', 'pipe', 'pipe'] });
  onTestFinished(() => void child.kill('SIGKILL'));
  let out = '';
  let first = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!first && out.includes('\n')) {
      first = out.slice(0, out.indexOf('\n'));
      child.stdout.destroy(); // like `head -1` exiting: the child's next write meets EPIPE
    }
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, first, stderr })));
}

describe('[slow] soup: output and help', { timeout: 240_000 }, () => {
  it('`soup --help | head -1` prints the first line and exits 0, no EPIPE stack', async () => {
    const cwd = useTempDir();
    // A pipe closed before the first byte is written, then one closed after the first line.
    const early = spawn(process.execPath, [bin, '--help'], {
      cwd,
      env: baseEnv(cwd),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    early.stdout.destroy();
    let earlyErr = '';
    early.stderr.setEncoding('utf8').on('data', (d: string) => (earlyErr += d));
    const earlyCode = await new Promise((r) => early.on('close', r));
    expect(earlyErr).not.toMatch(/EPIPE|Error/);
    expect(earlyCode).toBe(0);
    const r = await soupHeadOne(['--help'], cwd);
    expect(r.first).toBe('Usage: soup [options] [command]');
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
    expect(r.code).toBe(0);
  });

  it('`soup train … | head -1` keeps training to the end: final/ pushed, pointer terminal', async () => {
    const cwd = useTempDir();
    writeFileSync(
      join(cwd, 'soup.yaml'),
      `base: soup/epipe-gpt
model: {vocab_size: 256, d_model: 16, n_heads: 2, n_layers: 1, d_ff: 32}
data: {train: ${assetPath('corpus/train.txt')}, val: ${assetPath('corpus/val.txt')}, max_length: 16}
training: {steps: 12, batch_size: 2, micro_batch_size: 2, lr: 0.01, warmup_steps: 1, threads: 1, val_batches: 2}
hub: {push_every_steps: 4}
output: out
`,
    );
    const r = await soupHeadOne(['train', '-c', 'soup.yaml'], cwd);
    expect(r.first).toMatch(/^soup: run soup-[0-9a-f]+: soup\/epipe-gpt, 12 steps/);
    expect(r.stderr).not.toMatch(/EPIPE|ERR_STREAM/);
    expect(r.code, r.stderr).toBe(0);
    const pointer = JSON.parse(readFileSync(join(cwd, 'out-ckpt', 'latest.json'), 'utf8')) as Record<string, unknown>;
    expect(pointer).toMatchObject({ step: 12, path_in_repo: 'final', terminal: true });
    expect(existsSync(join(cwd, 'out-ckpt', 'final', 'model.safetensors'))).toBe(true);
    // progress went on on stderr, which stayed open: a line at every 10 % from the first
    expect(r.stderr).toContain('train: 2/12 (16%)');
    expect(r.stderr).toContain('train: 12/12 (100%)');
  });

  it('a resumed session counts relative to the horizon: 9/12 (75%), never 1/4 or 12/4 (300%)', async () => {
    const cwd = useTempDir();
    writeFileSync(
      join(cwd, 'soup.yaml'),
      `base: soup/resume-gpt
model: {vocab_size: 256, d_model: 16, n_heads: 2, n_layers: 1, d_ff: 32}
data: {train: ${assetPath('corpus/train.txt')}, val: null, max_length: 16}
training: {steps: 12, batch_size: 2, micro_batch_size: 2, lr: 0.01, warmup_steps: 1, threads: 1}
hub: {push_every_steps: 4}
output: out
`,
    );
    const leg1 = await soup(['train', '--stop-after-steps', '8'], cwd);
    expect(leg1.code, leg1.stderr).toBe(EXIT_CODES.segmentSaved);
    const leg2 = await soup(['train'], cwd);
    expect(leg2.code, leg2.stderr).toBe(0);
    expect(leg2.stdout).toContain('resuming from ckpt/checkpoint-8 at step 8');
    const lines = leg2.stderr.split('\n').filter((l) => l.startsWith('soup: train: '));
    expect(lines).toEqual([`soup: train: 9/12 (75%)  loss ${lines[0]!.split('  loss ')[1]}`, ...lines.slice(1)]);
    expect(lines.map((l) => /^soup: train: (\d+)\/(\d+)/.exec(l)!.slice(1).join('/'))).toEqual([
      '9/12',
      '10/12',
      '11/12',
      '12/12',
      '12/12',
    ]); // … the last one is the summary
    expect(leg2.stderr).not.toMatch(/\((?!100%)\d{3,}%\)/);
  });

  it("no help states a default twice (a default written in the text and commander's own)", async () => {
    const cwd = useTempDir();
    const commands = [
      ['train'],
      ['run'],
      ['probe'],
      ['plan'],
      ['init'],
      ['ckpt', 'push'],
      ['ckpt', 'pull'],
      ['ckpt', 'final'],
      ['ckpt', 'status'],
      ['cache', 'ls'],
      ['cache', 'clear'],
    ];
    const helps = await Promise.all(commands.map((c) => soup([...c, '--help'], cwd)));
    for (const [i, r] of helps.entries()) {
      expect(r.code, r.stderr).toBe(0);
      // Commander wraps long descriptions: compare with the line breaks and indents taken out.
      const text = r.stdout.replace(/\s+/g, ' ');
      expect(text, `soup ${commands[i]?.join(' ')} --help`).not.toMatch(/\(default: [^)]*\) \(default: /);
    }
  });

  it('a bare `soup` prints the help (exit 0); a bare group prints its help and exits 2', async () => {
    const cwd = useTempDir();
    const top = await soup([], cwd);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^Usage: soup \[options\] \[command\]/);
    for (const group of ['cache', 'ckpt']) {
      const r = await soup([group], cwd);
      expect(r.code, group).toBe(EXIT_CODES.usage);
      expect(r.stderr).toMatch(new RegExp(`^Usage: soup ${group} \\[options\\] \\[command\\]`));
      expect(r.stderr).toContain(`soup: ${group} needs a subcommand: `);
      expect(r.stdout).toBe('');
    }
    expect((await soup(['ckpt', '--help'], cwd)).code).toBe(0);
  });

  it('an unknown subcommand suggests the closest real one, at every level', async () => {
    const cwd = useTempDir();
    const cases: [string[], string, string][] = [
      [['trian'], 'train', 'soup --help'],
      [['ckpt', 'statuz', '--repo', 'file://x'], 'status', 'soup ckpt --help'],
      [['cache', 'lss'], 'ls', 'soup cache --help'],
      [['ckpt', 'pul'], 'pull', 'soup ckpt --help'],
    ];
    for (const [args, want, see] of cases) {
      const r = await soup(args, cwd);
      expect(r.code, args.join(' ')).toBe(EXIT_CODES.usage);
      expect(r.stderr).toBe(
        `soup: unknown command '${args[args.length > 2 ? 1 : args.length - 1]}' (did you mean ${want}?) (see: ` +
          `${see})\n`,
      );
    }
  });

  it('required options are marked in --help and all reported together', async () => {
    const cwd = useTempDir();
    const help = await soup(['ckpt', 'pull', '--help'], cwd);
    expect(help.stdout).toMatch(/--repo <repo> +a Hub repo id \(user\/name\) or file:\/\/path \(required\)/);
    expect(help.stdout).toMatch(/--dest <dir> +.*\(required\)/);
    expect(help.stdout).not.toMatch(/--step <n>.*\(required\)/);
    const r = await soup(['ckpt', 'pull'], cwd);
    expect(r.code).toBe(EXIT_CODES.usage);
    expect(r.stderr).toBe(
      "soup: required options '--dest <dir>', '--repo <repo>' not specified (see: soup ckpt pull --help)\n",
    );
    const one = await soup(['ckpt', 'pull', '--dest', 'x'], cwd);
    expect(one.stderr).toBe("soup: required option '--repo <repo>' not specified (see: soup ckpt pull --help)\n");
  });
});
