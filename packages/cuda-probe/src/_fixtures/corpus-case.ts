// The shape of an error-corpus case, and the traceback pieces the cases share.
export interface CorpusCase {
  name: string;
  stderr: string;
  stdout?: string;
  exitCode: number | null;
  signal?: NodeJS.Signals;
  /** `oom:<kind>`, `killed`, or `error` / `error:<excluded kind>` (a ProbeChildError). */
  expect: string;
}

export const TB = 'Traceback (most recent call last):';
export const frames = (file = 'train.py') =>
  `  File "/srv/${file}", line 88, in <module>\n    main()\n  File "/srv/${file}", line 70, in main\n    ` +
  `loss.backward()`;
