import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { assetPath } from '../_assets';
import type { CommandContext } from '../_context';
import { UsageError } from '../errors';

/** `soup init`: writes a commented soup.yaml and the text it trains on (data/train.txt, data/val.txt). */
export async function run(opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const template = String(opts.template ?? 'tiny');
  const target = resolve(ctx.cwd, String(opts.output ?? 'soup.yaml'));
  const dataDir = join(dirname(target), 'data');
  const files: [string, string][] = [
    [assetPath(`templates/${template}.yaml`), target],
    [assetPath('corpus/train.txt'), join(dataDir, 'train.txt')],
    [assetPath('corpus/val.txt'), join(dataDir, 'val.txt')],
  ];
  const show = (p: string): string => relative(ctx.cwd, p) || p;
  if (!opts.force) {
    const existing = files.map(([, to]) => to).filter((to) => existsSync(to));
    if (existing.length > 0) {
      throw new UsageError(`${existing.map(show).join(', ')} already exist${existing.length === 1 ? 's' : ''}; pass --force to overwrite`);
    }
  }
  mkdirSync(dataDir, { recursive: true });
  for (const [from, to] of files) {
    if (to.endsWith('.yaml')) writeFileSync(to, readFileSync(from, 'utf8'));
    else copyFileSync(from, to);
  }
  const written = files.map(([, to]) => show(to));
  ctx.emit({ ok: true, template, files: written });
  ctx.say(`wrote ${written.join(', ')} (template ${template})`);
  ctx.say(`next: soup plan${show(target) === 'soup.yaml' ? '' : ` -c ${show(target)}`}   then: soup train${show(target) === 'soup.yaml' ? '' : ` -c ${show(target)}`}`);
}
