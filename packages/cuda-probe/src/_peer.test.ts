import { describe, expect, it } from 'vitest';
import { assertPeers } from './_peer';
import { PeerDependencyMissingError } from './errors';

describe('assertPeers', () => {
  it('passes when the optional peers resolve (the workspace installs them)', () => {
    expect(() => assertPeers('createTrainStepProbe', ['onnxruntime-node', '@soup/onnx-train'])).not.toThrow();
  });

  it('names every missing peer and its install command (the release check covers a real install without them)', () => {
    let err: unknown;
    try {
      assertPeers('createOrtProbe', ['onnxruntime-node', 'soup-i16-not-a-package']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PeerDependencyMissingError);
    expect((err as PeerDependencyMissingError).code).toBe('SOUP_PEER_DEPENDENCY_MISSING');
    expect((err as PeerDependencyMissingError).packages).toEqual(['soup-i16-not-a-package']);
    expect((err as Error).message).toBe(
      'createOrtProbe needs soup-i16-not-a-package, an optional peer dependency of @soup/cuda-probe that is not ' +
        'installed: npm install soup-i16-not-a-package (createCommandProbe needs neither)',
    );
  });
});
