// onnxruntime-node and @soup/onnx-train are optional peer dependencies: only the ORT and train-step
// probes load them (in the child), so the command probe installs without 288 MB it does not use.
import { createRequire } from 'node:module';
import { PeerDependencyMissingError } from './errors';

const require = createRequire(import.meta.url);

/** Install commands of the optional peers (the versions this package is built and tested with). */
export const PEER_INSTALL: Readonly<Record<string, string>> = {
  'onnxruntime-node': 'npm install onnxruntime-node@1.30.0',
  '@soup/onnx-train': 'npm install @soup/onnx-train',
};

/**
 * Throws a {@link PeerDependencyMissingError} naming the install command when one of `peers` cannot
 * be resolved from this package. Resolves `<peer>/package.json` only: nothing is loaded.
 */
export function assertPeers(what: string, peers: readonly string[]): void {
  const missing = peers.filter((name) => {
    try {
      require.resolve(`${name}/package.json`);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return;
  throw new PeerDependencyMissingError(
    `${what} needs ${missing.join(' and ')}, ` +
      `${missing.length === 1 ? 'an optional peer dependency' : 'optional peer dependencies'} of @soup/cuda-probe ` +
      `that ${missing.length === 1 ? 'is' : 'are'} not installed: ` +
      `${missing.map((m) => PEER_INSTALL[m] ?? `npm install ${m}`).join(' && ')} (createCommandProbe needs neither)`,
    { packages: missing },
  );
}
