import { join } from 'node:path';
import { expect } from 'vitest';
import { describeRun, run } from './_run';
import type { WorkspacePackage } from './_workspace';

export const npm: string = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** `npm pack`s each package into `dest`; returns each package's tarball path by name. */
export async function packAll(packages: WorkspacePackage[], dest: string): Promise<Map<string, string>> {
  const tarballs = new Map<string, string>();
  for (const pkg of packages) {
    const r = await run(npm, ['pack', '--json', '--pack-destination', dest], { cwd: pkg.dir });
    expect(r.code, describeRun(`npm pack ${pkg.name}`, r)).toBe(0);
    const info = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as Array<{ filename: string }>;
    tarballs.set(pkg.name, join(dest, info[0]!.filename));
  }
  return tarballs;
}
