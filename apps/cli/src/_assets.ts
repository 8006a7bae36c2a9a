import { fileURLToPath } from 'node:url';

/**
 * Absolute path of a file under the package's `assets/` folder.
 * This file sits directly in `src/` and is bundled directly into `dist/`, so `../assets` is right from both.
 */
export function assetPath(name: string): string {
  return fileURLToPath(new URL(`../assets/${name}`, import.meta.url));
}
