// Installed alone: a soup.yaml validated and fingerprinted, a bad one described, and the shipped JSON Schema found.
import { existsSync, readFileSync } from 'node:fs';
import { parseBytes, runFingerprint, schemaPath, validateConfig } from '@soup/config';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const text = 'base: soup/tiny-gpt\ndata:\n  train: data/train.txt\n  max_length: 64\ntraining:\n  steps: 10\n';
const ok = validateConfig({ text, file: '/proj/soup.yaml', cwd: '/proj' });
check(ok.config !== null && ok.errors.length === 0, `valid config: ${JSON.stringify(ok.errors)}`);
check(ok.config.data.trainPath === '/proj/data/train.txt', `train path: ${ok.config.data.trainPath}`);
const bad = validateConfig({ text: `${text}  stepz: 3\n`, file: '/proj/soup.yaml' });
check(bad.config === null && /steps/.test(bad.errors[0]?.message ?? ''), `typo: ${JSON.stringify(bad.errors)}`);
const fp = runFingerprint({ config: ok.config, trainSha256: 'a'.repeat(64), valSha256: null });
check(/^soup-[0-9a-f]{20}$/.test(fp.run), `fingerprint: ${fp.run}`);
check(parseBytes('6GiB') === 6 * 1024 ** 3, 'parseBytes');
check(existsSync(schemaPath()) && JSON.parse(readFileSync(schemaPath(), 'utf8')).properties.training, 'schema');
console.log('SMOKE OK');
