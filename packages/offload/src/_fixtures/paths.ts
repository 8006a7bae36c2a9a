import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The child-process fixture (TypeScript, run through tsx). */
export const STORE_CHILD: string = join(import.meta.dirname, 'store-child.ts');
/** `--import` value loading tsx by absolute URL, so children may run with any cwd (e.g. a temp dir). */
export const TSX_IMPORT: string = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
