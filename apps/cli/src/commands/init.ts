import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { assetPath } from '../_assets';
import type { CommandContext } from '../_context';
import { UsageError } from '../errors';
import type { InitOptions } from './init.options';

/**
 * `soup init`: writes a commented soup.yaml and the text it trains on (data/train.txt, data/val.txt).
 * Training text already in data/ is the user's: it is kept, never overwritten (not even with --force),
 * so `soup init -c other.yaml` works in a folder that already has data/.
 */
export async function run(opts: InitOptions, ctx: CommandContext): Promise<void> {
  const template = opts.template;
  const target = resolve(ctx.cwd, opts.config);
  const dataDir = join(dirname(target), 'data');
  const show = (p: string): string => relative(ctx.cwd, p) || p;
  if (existsSync(target) && !opts.force) {
    throw new UsageError(
      `${show(target)} already exists; pass --force to overwrite it, or -c <file> to write another config`,
    );
  }
  const data: [string, string][] = [
    [assetPath('corpus/train.txt'), join(dataDir, 'train.txt')],
    [assetPath('corpus/val.txt'), join(dataDir, 'val.txt')],
  ];
  const kept = data.filter(([, to]) => existsSync(to)).map(([, to]) => to);
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(target, readFileSync(assetPath(`templates/${template}.yaml`), 'utf8'));
  const written = [target];
  for (const [from, to] of data) {
    if (kept.includes(to)) continue;
    copyFileSync(from, to);
    written.push(to);
  }
  ctx.emit({ ok: true, template, files: written.map(show), kept: kept.map(show) });
  ctx.say(`wrote ${written.map(show).join(', ')} (template ${template})`);
  if (kept.length)
    ctx.say(
      `kept ${kept.map(show).join(', ')}: already there (soup never overwrites training text); the config trains ` +
        `on ${kept.length === 1 ? 'it' : 'them'}`,
    );
  // Shell-quoted, so the hint runs as printed (a name with a space or a quote in it).
  const quoted = /^[\w./-]+$/.test(show(target)) ? show(target) : `'${show(target).replaceAll("'", "'\\''")}'`;
  const c = show(target) === 'soup.yaml' ? '' : ` -c ${quoted}`;
  ctx.say(`next: soup plan${c}   then: soup train${c}`);
}
