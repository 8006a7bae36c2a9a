import { fileURLToPath } from 'node:url';

/**
 * Absolute path of soup.yaml's JSON Schema (`assets/soup.schema.json`, shipped with this package), for
 * editors and tools that validate soup.yaml themselves. `src/` and `dist/` sit side by side, so `../assets`
 * is right from both.
 */
export function schemaPath(): string {
  return fileURLToPath(new URL('../assets/soup.schema.json', import.meta.url));
}
