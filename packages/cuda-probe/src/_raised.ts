// What a failed trainer raised, as opposed to everything it logged: the exception lines of its
// Python tracebacks (every rank's, launcher prefixes removed), then the error lines after the
// last traceback; without a traceback, the error-looking lines among its last 20 lines.
import { stripLauncherPrefix } from './classify-out-of-memory';

export interface Raised {
  /** The lines judged. */
  lines: string[];
  /** The same lines, one block per exception (and one for the error lines after them). */
  blocks: string[][];
  /** Where they came from. */
  source: 'traceback' | 'error-lines' | 'none';
}

const TRACEBACK = /^Traceback \(most recent call last\):/;
const CHAIN = /^(During handling of the above exception|The above exception was the direct cause)/;
// A line that reports an error rather than progress: Python/JS exception names, C++ aborts,
// glog E/F lines, a shell's "Killed", a launcher's failure summary.
const ERRORISH = /error|exception|fatal|killed|terminate called|what\(\):|abort|failed|failure|^[EF]\d{4} /i;
const TAIL_LINES = 20;

/** Lines of `text` with launcher prefixes removed and trailing whitespace trimmed. */
export function cleanLines(text: string): string[] {
  return text.split('\n').map((l) => stripLauncherPrefix(l.replace(/\r$/, '')).trimEnd());
}

function exceptionOf(lines: string[], from: number): { lines: string[]; end: number } {
  let i = from + 1;
  // Frames: indented lines (`  File ...`, source, `^^^^` markers).
  while (i < lines.length && (lines[i] === '' || /^\s/.test(lines[i]!))) i++;
  const out: string[] = [];
  while (i < lines.length && out.length < 12) {
    const l = lines[i]!;
    if (l === '' || TRACEBACK.test(l) || CHAIN.test(l) || /^\s+File "/.test(l)) break;
    out.push(l.trim());
    i++;
  }
  return { lines: out, end: i };
}

/** What a finished, failed process raised (see the file comment). */
export function raisedLines(output: string): Raised {
  const lines = cleanLines(output);
  const found: string[][] = [];
  let lastEnd = -1;
  for (let i = 0; i < lines.length; i++) {
    if (!TRACEBACK.test(lines[i]!.trim())) continue;
    const ex = exceptionOf(lines, i);
    if (ex.lines.length > 0) found.push(ex.lines);
    lastEnd = ex.end;
    i = Math.max(i, ex.end - 1);
  }
  if (found.length > 0) {
    const after = lines.slice(lastEnd).filter((l) => l.trim() !== '' && ERRORISH.test(l.trim()));
    const blocks = after.length > 0 ? [...found, after.slice(-TAIL_LINES).map((l) => l.trim())] : found;
    return { lines: blocks.flat(), blocks, source: 'traceback' };
  }
  const tail = lines.filter((l) => l.trim() !== '').slice(-TAIL_LINES);
  const errors = tail.filter((l) => ERRORISH.test(l.trim()));
  const trimmed = errors.map((l) => l.trim());
  return trimmed.length > 0
    ? { lines: trimmed, blocks: [trimmed], source: 'error-lines' }
    : { lines: [], blocks: [], source: 'none' };
}

/** The last `n` lines of a text (launcher prefixes kept: this is what the user reads). */
export function lastLines(text: string, n = TAIL_LINES): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-n).join('\n');
}
