import { NoBatchFitsError } from '@soup/batch-probe';
import { LeaseHeldError, LeaseLostError } from '@soup/hub-ckpt';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@soup/config';
import { BudgetUnmeasuredError } from '@soup/plan';
import { TokenMissingError, UsageError } from './errors';
import { EXIT_CODES, exitCodeFor } from './exit-codes';

describe('exitCodeFor', () => {
  it('maps errors by their code', () => {
    expect(exitCodeFor(new ConfigError({ file: 'soup.yaml', issues: [{ path: 'x', message: 'bad' }] }))).toBe(
      EXIT_CODES.config,
    );
    expect(exitCodeFor(new UsageError('x'))).toBe(EXIT_CODES.usage);
    expect(exitCodeFor(new TokenMissingError('x'))).toBe(EXIT_CODES.auth);
    expect(exitCodeFor(new NoBatchFitsError(1, []))).toBe(EXIT_CODES.noFit);
    // gradient_checkpointing: budget without a measured peak fails as a training step does.
    expect(exitCodeFor(new BudgetUnmeasuredError('x'))).toBe(EXIT_CODES.train);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_UNAUTHORIZED' }))).toBe(EXIT_CODES.auth);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_STALE_RUN' }))).toBe(EXIT_CODES.resume);
  });
  it('store writers, unsafe links and a full disk have their own codes', () => {
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_CKPT_LEASE_HELD' }))).toBe(EXIT_CODES.storeBusy);
    const holder = { host: 'h', pid: 1, since: 's', run: 'r', expires_at: 'e' };
    expect(exitCodeFor(new LeaseHeldError({ where: 'dir:/x', holder }))).toBe(EXIT_CODES.storeBusy);
    // A lost lease has its own code, and the same exit as a held one: another writer has the store.
    const lost = new LeaseLostError({ where: 'dir:/x', lease: { id: 'l', expires_at: 'e' } });
    expect(lost.code).toBe('SOUP_HUB_CKPT_LEASE_LOST');
    expect(exitCodeFor(lost)).toBe(EXIT_CODES.storeBusy);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_CKPT_CONCURRENT_WRITE' }))).toBe(
      EXIT_CODES.storeBusy,
    );
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_CKPT_FOLDER_CONFLICT' }))).toBe(
      EXIT_CODES.storeBusy,
    );
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_CKPT_UNSAFE_LINK' }))).toBe(EXIT_CODES.usage);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'SOUP_HUB_CKPT_DISK_FULL' }))).toBe(EXIT_CODES.diskFull);
  });
  it('falls back to internal', () => {
    expect(exitCodeFor(new Error('x'))).toBe(EXIT_CODES.internal);
    expect(exitCodeFor('text')).toBe(EXIT_CODES.internal);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe(EXIT_CODES.internal);
  });
  it('documents distinct codes', () => {
    const values = Object.values(EXIT_CODES);
    expect(new Set(values).size).toBe(values.length);
  });
});
