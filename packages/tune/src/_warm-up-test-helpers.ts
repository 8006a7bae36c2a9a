// A trainer whose first steps are slow, for the tests of the warm-up's cancelling (real child processes).

/** A line at start, then one a step: each step sleeps `--step_ms`, the first `--warmup_steps` `--warmup_ms` more. */
export const WARM_UP_TRAINER = `
const arg = (name) => Number(process.argv[process.argv.indexOf('--' + name) + 1]);
const cell = new Int32Array(new SharedArrayBuffer(4));
console.log('training');
for (let s = 1; s <= arg('max_steps'); s++) {
  Atomics.wait(cell, 0, 0, arg('step_ms') + (s <= arg('warmup_steps') ? arg('warmup_ms') : 0));
  console.log('step ' + s);
}
`;
