// The one "nothing fits" advice, shared by probe, plan, train and run: what soup (or the user) can
// change here, right for the device and for where the budget came from.
import { formatBytes } from '@soup/batch-probe';

/** What {@link noFitAdvice} needs to know. */
export interface NoFitAdviceOptions {
  /**
   * config: a soup.yaml model (probe -c, plan, train); model: probe --model; exec: a trainer command (probe --exec, run
   * --probe).
   */
  mode: 'config' | 'model' | 'exec';
  device: 'cpu' | 'cuda';
  /** The checkpointing tier's granularity (config mode), null when off. */
  granularity?: string | null;
  /** The activation offload in use (config mode), null when none. */
  offloadTarget?: 'cpu' | 'disk' | null;
  budgetBytes: number | null;
  /**
   * Where the budget came from: the command line, soup.yaml's training.memory_budget, or nowhere (the device's own).
   */
  budgetFrom: 'flag' | 'config' | null;
  maxLength: number;
}

/** One line: "What soup can change here: …". */
export function noFitAdvice(p: NoFitAdviceOptions): string {
  const budget =
    p.budgetBytes === null
      ? null
      : p.budgetFrom === 'config'
        ? `a bigger training.memory_budget in soup.yaml (now ${formatBytes(p.budgetBytes)})`
        : `a bigger --budget than ${formatBytes(p.budgetBytes)}`;
  if (p.mode === 'exec') {
    return (
      `soup runs your trainer as it is, so here it can only ${budget ? `give it ${budget}` : 'measure it'}` +
      `; shorten the trainer's own max_length or turn on its gradient checkpointing, then probe again.`
    );
  }
  const ways: string[] = [];
  if (p.mode === 'config') {
    if (p.granularity !== 'full')
      ways.push(
        `a stronger checkpointing tier (training.gradient_checkpointing: ` +
          `${p.granularity == null ? 'selective, medium or full' : 'full'})`,
      );
    // On a CPU, "host RAM" is the memory that ran out: only scratch files move activations out of it.
    if (p.offloadTarget == null)
      ways.push(
        p.device === 'cuda'
          ? 'activation offload (training.activation_offloading: cpu or disk)'
          : 'activation offload to scratch files (training.activation_offloading: disk)',
      );
    else if (p.offloadTarget === 'cpu' && p.device === 'cpu')
      ways.push('activation offload to scratch files instead of RAM (training.activation_offloading: disk)');
  }
  ways.push(
    p.mode === 'config'
      ? `a shorter data.max_length (now ${p.maxLength})`
      : `a shorter --max-length (now ${p.maxLength})`,
  );
  if (budget) ways.push(budget);
  return `What soup can change here: ${ways.slice(0, -1).join(', ')}${ways.length > 1 ? ' or ' : ''}${ways.at(-1)}.`;
}
