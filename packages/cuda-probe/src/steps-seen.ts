// The trainer's own count of the steps a run ran: what shows a timing run ran its {probe_steps} when
// neither its wall clock nor its output can (a trainer that stops early but evaluates, logs or sleeps
// as long as the steps it skipped). Two sources, each declared by the caller, never guessed:
//   - a pattern over its output lines (stdout and stderr, each line also behind a launcher's
//     `[rank0]:` / `[default0]:` prefix): the largest number it captured;
//   - a trainer_state.json it wrote during the run (the HF Trainer's, at a save): its `global_step`.
// A declared source that shows nothing counts 0 steps: the trainer was said to print or write them.
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { ProbeOptionsError } from './errors';

/** Where a run shows the steps it ran, both optional (neither: no count). */
export interface StepsEvidence {
  /**
   * A regular expression over each output line with one capture group, or a group named `step`,
   * holding the step number, e.g. `step (\d+)`; the largest number captured in a run is its count.
   */
  pattern?: string;
  /**
   * A trainer_state.json, or a folder holding one directly or in a `checkpoint-*` folder, relative
   * to the command's working directory and inside it. Only a file written during the run counts.
   */
  file?: string;
}

/** How the errors name the two sources. @default `stepsPattern` and `stepsFile` */
export interface StepsEvidenceNames {
  pattern: string;
  file: string;
}

const LAUNCHER_PREFIX = /^\[(?:rank|default)\d+\]:\s?/;
/** A line longer than this without a line end is matched as it is and dropped (a progress bar without \r). */
const MAX_LINE_CHARS = 1 << 16;

/** A pattern compiled: the regex (global) and which group holds the step. */
function compile(source: string): { re: RegExp; group: number | 'step' } | { error: string } {
  let re: RegExp;
  try {
    re = new RegExp(source, 'g');
  } catch (err) {
    return { error: `not a regular expression (${(err as Error).message})` };
  }
  // An alternative that matches the empty string shows every group of the pattern.
  const probe = new RegExp(`${source}|`).exec('')!;
  if (probe.groups !== undefined && 'step' in probe.groups) return { re, group: 'step' };
  const groups = probe.length - 1;
  if (groups === 1) return { re, group: 1 };
  return {
    error:
      groups === 0
        ? "it has no capture group: put the step number in one, e.g. 'step (\\d+)'"
        : `it has ${groups} capture groups: name the step's (?<step>\\d+), or make the others (?:…)`,
  };
}

/** Why `evidence` is refused (each error names the source by `names`), empty when it is sound. */
export function checkStepsEvidence(evidence: StepsEvidence, names?: StepsEvidenceNames): string[] {
  const n = names ?? { pattern: 'stepsPattern', file: 'stepsFile' };
  const errors: string[] = [];
  if (evidence.pattern !== undefined) {
    const c = compile(evidence.pattern);
    if ('error' in c) errors.push(`${n.pattern} '${evidence.pattern}': ${c.error}`);
  }
  const f = evidence.file;
  if (f !== undefined && (f === '' || isAbsolute(f) || relative('.', f).split(/[\\/]/)[0] === '..'))
    errors.push(
      `${n.file} '${f}': give a path inside the working directory (the trainer's output ` +
        'folder or its trainer_state.json, e.g. out/), never one out of it',
    );
  return errors;
}

/** One run's count, started before the run (its trainer_state.json files as they were then). */
export interface StepsCount {
  /** A chunk of the run's output on one stream, as it arrives. */
  onOutput(stream: 'stdout' | 'stderr', chunk: string): void;
  /** The run's count, once it exited: the largest step any declared source showed, 0 when none showed one. */
  finish(): number;
}

/** The trainer_state.json files `file` names (itself, or in the folder and its checkpoint-* folders) that exist. */
function stateFiles(cwd: string, file: string): string[] {
  const at = resolve(cwd, file);
  let isDir: boolean;
  try {
    isDir = statSync(at).isDirectory();
  } catch {
    return [];
  }
  if (!isDir) return [at];
  let names: string[];
  try {
    names = readdirSync(at);
  } catch {
    return [];
  }
  const dirs = ['', ...names.filter((d) => d.startsWith('checkpoint-'))];
  return dirs
    .map((d) => join(at, d, 'trainer_state.json'))
    .filter((p) => {
      try {
        return statSync(p).isFile();
      } catch {
        return false;
      }
    });
}

/** A file's identity and version: a rewrite changes it. */
function signature(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
}

/** `global_step` of a trainer_state.json inside `root` (its real path, links followed, in it), else null. */
function globalStep(path: string, root: string): number | null {
  try {
    const real = realpathSync(path);
    const rel = relative(root, real);
    if (rel === '' || rel.split(/[\\/]/)[0] === '..' || isAbsolute(rel)) return null;
    const step = (JSON.parse(readFileSync(real, 'utf8')) as { global_step?: unknown }).global_step;
    return typeof step === 'number' && Number.isInteger(step) && step >= 0 ? step : null;
  } catch {
    return null;
  }
}

/**
 * Starts counting one run's steps by `evidence` (checked by checkStepsEvidence) under `cwd`; null
 * when it declares no source (a bad pattern throws ProbeOptionsError). Call it right before the run
 * starts: a trainer_state.json already there counts only once the run rewrote it.
 */
export function startStepsCount(evidence: StepsEvidence, cwd: string): StepsCount | null {
  if (evidence.pattern === undefined && evidence.file === undefined) return null;
  const compiled = evidence.pattern === undefined ? null : compile(evidence.pattern);
  if (compiled !== null && 'error' in compiled)
    throw new ProbeOptionsError(`steps.pattern: ${compiled.error}`, { field: 'steps.pattern' });
  const file = evidence.file;
  const before = new Map((file === undefined ? [] : stateFiles(cwd, file)).map((p) => [p, signature(p)]));
  let best = 0;
  const partial = { stdout: '', stderr: '' };
  const matchLine = (line: string): void => {
    if (compiled === null) return;
    for (const text of new Set([line, line.replace(LAUNCHER_PREFIX, '')]))
      for (const m of text.matchAll(compiled.re)) {
        const v = compiled.group === 'step' ? m.groups?.step : m[compiled.group];
        if (v !== undefined && /^\d+$/.test(v)) best = Math.max(best, Number(v));
      }
  };
  return {
    onOutput(stream, chunk) {
      if (compiled === null) return;
      const lines = (partial[stream] + chunk).split(/\r\n|\r|\n/);
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) matchLine(line);
      if (partial[stream].length > MAX_LINE_CHARS) {
        matchLine(partial[stream]);
        partial[stream] = '';
      }
    },
    finish() {
      matchLine(partial.stdout);
      matchLine(partial.stderr);
      partial.stdout = partial.stderr = '';
      if (file !== undefined) {
        let root: string;
        try {
          root = realpathSync(cwd);
        } catch {
          return best;
        }
        for (const p of stateFiles(cwd, file)) {
          const sig = signature(p);
          if (sig === null || before.get(p) === sig) continue;
          best = Math.max(best, globalStep(p, root) ?? 0);
        }
      }
      return best;
    },
  };
}
