import { describe, expect, it } from 'vitest';
import { readStoredJson } from './read-stored-json';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

describe.each(STORE_KINDS)('readStoredJson on %s store', (kind) => {
  it('the parsed file; null when it is missing or not JSON, or the repo does not exist', async () => {
    const t = await makeTestStore(kind);
    expect(await readStoredJson({ store: t.store, path: 'a/state.json' })).toBeNull();
    await t.store.create();
    const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
    await t.store.commit({
      message: 'files',
      operations: [
        { kind: 'put', path: 'a/state.json', bytes: enc('{"max_steps": 10, "log_history": []}') },
        { kind: 'put', path: 'a/broken.json', bytes: enc('{"max_steps": ') },
      ],
    });
    const s = t.reopen();
    expect(await readStoredJson({ store: s, path: 'a/state.json' })).toEqual({ max_steps: 10, log_history: [] });
    expect(await readStoredJson({ store: s, path: 'a/broken.json' })).toBeNull();
    expect(await readStoredJson({ store: s, path: 'a/missing.json' })).toBeNull();
  });
});
