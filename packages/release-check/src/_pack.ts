import { join } from 'node:path';
import { expect } from 'vitest';
import { describeRun, run } from './_run';
import { repoRoot, type WorkspacePackage } from './_workspace';

export const npm: string = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** A packed package: its tarball's path and the files npm put in it. */
export interface Packed {
  tarball: string;
  files: string[];
}

/**
 * `npm pack`s the packages into `dest` in one npm run (`-w` each; one npm start instead of one a package, the same
 * tarballs as `npm pack` in each package's folder); returns each package's tarball and files by name.
 */
export async function packAll(packages: WorkspacePackage[], dest: string): Promise<Map<string, Packed>> {
  const workspaces = packages.flatMap((pkg) => ['-w', pkg.name]);
  const r = await run(npm, ['pack', '--json', '--pack-destination', dest, ...workspaces], {
    cwd: repoRoot,
    timeoutMs: 280_000,
  });
  expect(r.code, describeRun('npm pack', r)).toBe(0);
  const infos = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as Array<{
    name: string;
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const packed = new Map(
    infos.map((info) => [info.name, { tarball: join(dest, info.filename), files: info.files.map((f) => f.path) }]),
  );
  expect([...packed.keys()].sort()).toEqual(packages.map((pkg) => pkg.name).sort());
  return packed;
}
