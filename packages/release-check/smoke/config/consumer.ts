import { ConfigError, loadConfig, type SoupConfig, SoupConfigError, validateConfig } from '@soup/config';

const r = validateConfig({ text: 'base: x\n', file: '/p/soup.yaml' });
export const config: SoupConfig | null = r.config;
export const isBase: boolean = new ConfigError({ file: 'soup.yaml', issues: [] }) instanceof SoupConfigError;
export const load: typeof loadConfig = loadConfig;
// @ts-expect-error text is required
validateConfig({ file: '/p/soup.yaml' });
