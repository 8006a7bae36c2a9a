import { describe, expect, it } from 'vitest';
import { redactArgv } from './redact-argv';

const TOKEN = `hf_${'a1B2c3D4e5'.repeat(4)}`;

describe('redactArgv', () => {
  it('masks the resolved token and token-shaped values, as separate arguments and inside one', () => {
    const argv = [
      './train.sh',
      'out',
      '--hub_token',
      TOKEN,
      `--hub_token=${TOKEN}`,
      '--other',
      `hf_${'Z'.repeat(30)}`,
      'mysecretvalue1',
      'hf_short',
    ];
    const shown = redactArgv(argv, { secrets: ['mysecretvalue1'] });
    expect(shown).toEqual([
      './train.sh',
      'out',
      '--hub_token',
      'hf_***',
      '--hub_token=hf_***',
      '--other',
      'hf_***',
      'hf_***',
      'hf_short',
    ]);
    expect(shown.join(' ')).not.toContain(TOKEN);
  });
  it('keeps a sha256 of each value for a fingerprint: a changed token changes it, the value never shows', () => {
    const a = redactArgv(['--hub_token', TOKEN], { as: 'sha256' });
    const b = redactArgv(['--hub_token', `${TOKEN}x`], { as: 'sha256' });
    expect(a[1]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a[1]).not.toBe(b[1]);
    expect(JSON.stringify([a, b])).not.toContain('a1B2c3D4e5');
  });
});

describe('redactArgv: keys, passwords and generated-looking values', () => {
  const WANDB = '0123456789abcdef0123456789abcdef01234567';
  it('masks the value of a flag or variable whose name says key, token, secret or password', () => {
    const argv = [
      '--wandb_key',
      WANDB,
      '--hf-token=short1',
      'API_KEY=abc123',
      '--db-password',
      'pw',
      '--max_tokens',
      '512',
      '--pad_token_id',
      '0',
    ];
    expect(redactArgv(argv)).toEqual([
      '--wandb_key',
      '***',
      '--hf-token=***',
      'API_KEY=***',
      '--db-password',
      '***',
      '--max_tokens',
      '512',
      '--pad_token_id',
      '0',
    ]);
  });
  it('masks a high-entropy value of 32+ characters anywhere, and keeps model names and paths', () => {
    const argv = [
      'train.py',
      `--report=${WANDB}`,
      'distilbert-base-uncased-finetuned-sst-2-english',
      '/data/out/run-1',
    ];
    expect(redactArgv(argv)).toEqual([
      'train.py',
      '--report=***',
      'distilbert-base-uncased-finetuned-sst-2-english',
      '/data/out/run-1',
    ]);
  });
  it('keeps a sha256 of a key for a fingerprint: a changed key is still a changed command', () => {
    const a = redactArgv(['--wandb_key', WANDB], { as: 'sha256' });
    const b = redactArgv(['--wandb_key', `${WANDB.slice(0, -1)}8`], { as: 'sha256' });
    expect(a[1]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a[1]).not.toBe(b[1]);
    expect(redactArgv(a, { as: 'sha256' })).toEqual(a);
    expect(JSON.stringify([a, b])).not.toContain('0123456789abcdef');
  });
});
