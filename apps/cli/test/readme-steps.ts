// Test-only: the commands a README section shows and the lines it says each prints, read from its ```console
// blocks, so a test can run them and hold the README to the product's real output.

export interface ReadmeStep {
  /** The command as the README shows it, split on spaces (`soup ckpt status --repo file://ckpt`). */
  argv: string[];
  /** The lines shown after it, trimmed; `…` stands for any text. */
  shown: string[];
}

/** The `$ ` commands of the ```console blocks in the README section under `heading`, each with its shown lines. */
export function readmeSteps(readme: string, heading: string): ReadmeStep[] {
  const start = readme.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`the README has no "${heading}" section`);
  const next = readme.indexOf('\n## ', start + heading.length + 2);
  const section = readme.slice(start, next < 0 ? undefined : next);
  const steps: ReadmeStep[] = [];
  for (const block of section.matchAll(/^```console\n([\s\S]*?)^```$/gm)) {
    // A line ending in `\` continues on the next, as in a shell.
    const lines = block[1]!.replace(/\\\n\s*/g, '').split('\n');
    for (const line of lines) {
      if (line.startsWith('$ ')) steps.push({ argv: line.slice(2).trim().split(/\s+/), shown: [] });
      else if (line.trim() !== '') {
        const step = steps.at(-1);
        if (!step) throw new Error(`a shown line before any command: ${line}`);
        step.shown.push(line.trim());
      }
    }
  }
  for (const { argv } of steps) {
    if (argv.some((a) => /["'`$|;&<>]/.test(a)))
      throw new Error(`quote or shell syntax in a README command: ${argv.join(' ')}`);
  }
  return steps;
}

/** The shown lines that no line of `output` matches (each compared trimmed and whole; `…` matches any text). */
export function linesNotShown(shown: string[], output: string): string[] {
  const outputLines = output.split('\n').map((l) => l.trim());
  return shown.filter((line) => {
    const pattern = new RegExp(
      `^${line
        .split('…')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    return !outputLines.some((l) => pattern.test(l));
  });
}
