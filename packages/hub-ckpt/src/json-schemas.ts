import manifestSchemaJson from './schemas/manifest.schema.json';
import pointerSchemaJson from './schemas/pointer.schema.json';

/** JSON schema (draft-07) of `latest.json`, as shipped and used by validatePointer. */
export const pointerSchema: Readonly<Record<string, unknown>> = pointerSchemaJson;
/** JSON schema (draft-07) of a checkpoint's `manifest.json`, as shipped and used by validateManifest. */
export const manifestSchema: Readonly<Record<string, unknown>> = manifestSchemaJson;
