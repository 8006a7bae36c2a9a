import { describeTier, planCheckpoint, planForBudget, resolveGranularity } from '@soup/grad-ckpt';

const names = [
  'wte',
  'wpe',
  ...[0, 1, 2, 3].flatMap((i) => [`h.${i}`, `h.${i}.attn`, `h.${i}.mlp`]),
  'ln_f',
  'lm_head',
];
const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
check(resolveGranularity('auto', 40) === 'medium', 'auto at 40 GB must be medium');
check(describeTier('auto', 40) === 'auto → medium (VRAM 40GB)', `describeTier: ${describeTier('auto', 40)}`);
check(planCheckpoint(names, 'full').join() === 'h.0,h.1,h.2,h.3', 'full plan');
check(planCheckpoint(names, 'selective').join() === 'h.0.attn,h.1.attn,h.2.attn,h.3.attn', 'selective plan');
const plan = planForBudget({
  blocks: [0, 1, 2, 3].map((i) => ({ name: `h.${i}`, activationBytes: 100 })),
  baselineBytes: 50,
  memoryBudgetBytes: 360,
});
check(plan.fits && plan.recompute.length > 0, `budget plan: ${JSON.stringify(plan)}`);
console.log('SMOKE OK');
