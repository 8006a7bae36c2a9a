// `--try NAME=v1,v2`: a trainer command's own levers and the values to try, checked against the
// command they fill (a validator: it returns its errors, the caller decides).

/** Placeholders soup fills itself: not a lever's name. */
const RESERVED = new Set([
  'batch_size',
  'micro_batch_size',
  'grad_accum',
  'probe_steps',
  'output_dir',
  'resume_from',
  'world_size',
]);

/**
 * `NAME=v1,v2` values, in order, as `NAME → values`; every NAME must appear as {NAME} in the command. `errors`: one
 * line per value that is refused, in the order given (the value is then left out).
 */
export function parseTries(
  values: readonly string[],
  command: string,
): { tries: Record<string, string[]>; errors: string[] } {
  const tries: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  const errors: string[] = [];
  for (const v of values) {
    const error = refusal(v, command, tries);
    if (typeof error === 'string') errors.push(error);
    else tries[error.name] = error.values;
  }
  return { tries, errors };
}

/** Why `v` is refused, or its name and values. */
function refusal(
  v: string,
  command: string,
  tries: Record<string, string[]>,
): string | { name: string; values: string[] } {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.+)$/.exec(v);
  if (!m) return `--try ${JSON.stringify(v)}: expected NAME=v1,v2,… (e.g. --try grad_ckpt=true,false)`;
  const [, name, list] = m as unknown as [string, string, string];
  if (RESERVED.has(name))
    return `--try ${name}: {${name}} is filled by soup itself; name the trainer's own lever (e.g. grad_ckpt)`;
  if (tries[name]) return `--try ${name} given twice: list every value once, e.g. --try ${name}=a,b`;
  const vals = list.split(',');
  if (vals.some((x) => x === '') || new Set(vals).size !== vals.length)
    return `--try ${v}: values must be non-empty and distinct`;
  if (!command.includes(`{${name}}`))
    return `--try ${name}: the command has no {${name}} to fill; put it where the trainer takes that setting`;
  return { name, values: vals };
}
