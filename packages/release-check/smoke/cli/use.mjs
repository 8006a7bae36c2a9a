// Installed alone: the `soup` bin from the tarball prints its help, writes a config with `soup init`,
// and the config it wrote validates; `npm exec soup` (what `npx soup` runs) finds the same bin.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const soup = (...args) =>
  spawnSync('node_modules/.bin/soup', args, { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
const help = soup('--help');
check(
  help.status === 0 && help.stdout.includes('Usage: soup') && help.stdout.includes('train'),
  `soup --help: ${help.status} ${help.stderr}`,
);
const init = soup('init', '--template', 'tiny');
check(init.status === 0 && existsSync('soup.yaml'), `soup init: ${init.status} ${init.stdout} ${init.stderr}`);
check(readFileSync('soup.yaml', 'utf8').includes('batch_size'), 'soup.yaml lacks training.batch_size');
const plan = soup('plan', '--json', '--no-cache');
check(plan.status === 0, `soup plan on the written config: ${plan.status} ${plan.stdout} ${plan.stderr}`);
const viaNpx = spawnSync('npm', ['exec', '--offline', '--', 'soup', '--version'], { encoding: 'utf8' });
check(
  viaNpx.status === 0 && /\d+\.\d+\.\d+/.test(viaNpx.stdout),
  `npm exec soup --version: ${viaNpx.status} ${viaNpx.stderr}`,
);
console.log('SMOKE OK');
