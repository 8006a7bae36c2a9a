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
