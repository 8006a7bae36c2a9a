import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const repoRoot: string = resolve(import.meta.dirname, '../../..');

export interface WorkspacePackage {
  name: string;
  dir: string;
  version: string;
  private: boolean;
  /** Internal (@soup/*) runtime dependencies. */
  soupDeps: string[];
}

/** Every workspace package (packages/* and apps/*), read from disk. */
export function workspacePackages(): WorkspacePackage[] {
  const out: WorkspacePackage[] = [];
  for (const group of ['packages', 'apps']) {
    const base = join(repoRoot, group);
    for (const entry of readdirSync(base)) {
      const file = join(base, entry, 'package.json');
      if (!existsSync(file)) continue;
      const pj = JSON.parse(readFileSync(file, 'utf8')) as {
        name: string;
        version: string;
        private?: boolean;
        dependencies?: Record<string, string>;
      };
      out.push({
        name: pj.name,
        dir: join(base, entry),
        version: pj.version,
        private: pj.private === true,
        soupDeps: Object.keys(pj.dependencies ?? {}).filter((d) => d.startsWith('@soup/')),
      });
    }
  }
  return out;
}

/** The public packages, each with the closure of its internal dependencies. */
export function publicPackages(): Array<WorkspacePackage & { closure: string[] }> {
  const all = workspacePackages();
  const byName = new Map(all.map((p) => [p.name, p]));
  const closure = (name: string, seen = new Set<string>()): Set<string> => {
    for (const dep of byName.get(name)?.soupDeps ?? []) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      closure(dep, seen);
    }
    return seen;
  };
  return all.filter((p) => !p.private).map((p) => ({ ...p, closure: [...closure(p.name)] }));
}

/** `@soup/batch-probe` -> `batch-probe` (the smoke folder name). */
export function shortName(name: string): string {
  return name.replace(/^@soup\//, '');
}
