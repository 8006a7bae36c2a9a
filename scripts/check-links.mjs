// Fails when a relative link in a README or a docs/ page does not resolve: the file must exist and a
// #fragment must name one of its headings (GitHub's anchors). Design notes and bench history live in docs/
// and the READMEs link into them, so a moved section or a renamed heading shows up here, not on GitHub.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');
const skip = new Set(['node_modules', 'dist', 'bench-results']);

/** Every README.md in the tree, and every Markdown page under docs/. */
function markdownFiles(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (skip.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) markdownFiles(path, out);
    else if (name === 'README.md' || (relative(root, path).startsWith('docs/') && name.endsWith('.md'))) out.push(path);
  }
  return out;
}

const anchorCache = new Map();
/** The anchors GitHub gives the headings of a Markdown file (fenced code skipped, duplicates numbered). */
function anchors(file) {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const seen = new Map();
  const set = new Set();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const slug = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    set.add(n === 0 ? slug : `${slug}-${n}`);
  }
  anchorCache.set(file, set);
  return set;
}

const broken = [];
for (const file of markdownFiles(root)) {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
    const [path, fragment] = link.split('#');
    const target = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
    if (!existsSync(target)) broken.push(`${relative(root, file)}: ${link}: no such file`);
    else if (fragment !== undefined && target.endsWith('.md') && !anchors(target).has(fragment))
      broken.push(`${relative(root, file)}: ${link}: no such heading`);
  }
}
if (broken.length > 0) {
  console.error(`${broken.length} broken Markdown link(s):\n${broken.join('\n')}`);
  process.exit(1);
}
