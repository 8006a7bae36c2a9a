// Which node of a multi-node launch this soup runs on: its flags, else SLURM's environment, else the torchrun
// command line it launches. Sources that disagree are refused, naming both, rather than one silently winning.
import { basename } from 'node:path';
import { SupervisorUsageError } from './errors';

/** This soup's node: its rank (0 leads), the node count, and where they came from. */
export interface NodeRole {
  rank: number;
  count: number;
  /** `flags` (--node-rank/--nnodes), `slurm` (SLURM_NODEID/SLURM_NNODES), `torchrun` (its argv), `single`. */
  source: 'flags' | 'slurm' | 'torchrun' | 'single';
  /** SLURM_JOB_ID when set (what `scontrol requeue` takes); null outside SLURM. */
  slurmJobId: string | null;
}

/** What {@link nodeRoleOf} reads. */
export interface NodeRoleInput {
  /** `--node-rank` / `--nnodes` as given (undefined: not given). */
  flags: { nodeRank?: number | undefined; nnodes?: number | undefined };
  env: NodeJS.ProcessEnv;
  /** The trainer command (after `--`): a torchrun there tells its `--nnodes` / `--node_rank`. */
  argv: readonly string[];
}

type Source = Exclude<NodeRole['source'], 'single'>;
interface Given {
  value: number;
  source: Source;
  /** How a person names it: `--node-rank 1`, `SLURM_NODEID=1`, `torchrun --node_rank 1`. */
  as: string;
}

/** torchrun's options that take no value (every other `--option` takes the next word, unless written `=v`). */
const TORCHRUN_FLAGS = new Set(['--standalone', '--no-python', '--no_python', '-m', '--module', '--run-path']);

/** Whether `word` starts torchrun: its script, or `-m torch.distributed.run` (or the older `.launch`). */
function isTorchrun(word: string, prev: string | undefined): boolean {
  if (basename(word) === 'torchrun') return true;
  return prev === '-m' && (word === 'torch.distributed.run' || word === 'torch.distributed.launch');
}

/** torchrun's own options in `argv` (up to its script), as name → value. */
function torchrunOptions(argv: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const at = argv.findIndex((w, i) => isTorchrun(w, argv[i - 1]));
  if (at === -1) return out;
  for (let i = at + 1; i < argv.length; i++) {
    const w = argv[i]!;
    if (!w.startsWith('-')) break; // the script: what follows is the script's own argv
    const eq = w.indexOf('=');
    if (eq !== -1) out.set(w.slice(0, eq), w.slice(eq + 1));
    else if (!TORCHRUN_FLAGS.has(w)) out.set(w, argv[++i] ?? '');
  }
  return out;
}

function integer(text: string, as: string, field: string, min: number): number {
  if (!/^\d+$/.test(text) || Number(text) < min)
    throw new SupervisorUsageError(`${as}: expected an integer >= ${min}`, { field });
  return Number(text);
}

/** torchrun's node count: `N` or the elastic `N:N`; a range soup cannot hold one writer over is refused. */
function torchrunCount(text: string): number {
  const [lo, hi = lo] = text.split(':');
  const as = `torchrun --nnodes ${text}`;
  const n = integer(lo ?? '', as, 'nnodes', 1);
  if (integer(hi ?? '', as, 'nnodes', 1) !== n)
    throw new SupervisorUsageError(`${as}: soup needs a fixed node count (N or N:N), not an elastic range`, {
      field: 'nnodes',
    });
  return n;
}

/** The one value several sources give, refusing two that differ (the error names both and the field). */
function agree(field: string, given: Array<Given | null>): Given | null {
  const present = given.filter((g): g is Given => g !== null);
  const first = present[0] ?? null;
  for (const g of present.slice(1)) {
    if (g.value !== first!.value)
      throw new SupervisorUsageError(
        `${first!.as} but ${g.as}: the node ${field === 'nodeRank' ? 'rank' : 'count'} must be the same in ` +
          'every place it is given',
        { field },
      );
  }
  return first;
}

/**
 * This soup's node rank and count: `--node-rank/--nnodes`, else SLURM's `SLURM_NODEID/SLURM_NNODES`, else torchrun's
 * `--node_rank/--nnodes` in the trainer argv; one node (rank 0 of 1) when none says. Sources that disagree, a rank
 * without a count, or a rank not below the count throw SupervisorUsageError naming the field.
 */
export function nodeRoleOf(p: NodeRoleInput): NodeRole {
  const { flags, env } = p;
  const torch = torchrunOptions(p.argv);
  const flag = (v: number | undefined, name: string): Given | null =>
    v === undefined ? null : { value: v, source: 'flags', as: `${name} ${v}` };
  const slurm = (name: string, min: number, field: string): Given | null => {
    const v = env[name];
    if (v === undefined || v === '') return null;
    const as = `${name}=${v}`;
    return { value: integer(v, as, field, min), source: 'slurm', as };
  };
  const torchRank = torch.get('--node_rank') ?? torch.get('--node-rank');
  const torchCount = torch.get('--nnodes');
  const rank = agree('nodeRank', [
    flag(flags.nodeRank, '--node-rank'),
    slurm('SLURM_NODEID', 0, 'nodeRank'),
    torchRank === undefined
      ? null
      : {
          value: integer(torchRank, `torchrun --node_rank ${torchRank}`, 'nodeRank', 0),
          source: 'torchrun',
          as: `torchrun --node_rank ${torchRank}`,
        },
  ]);
  const count = agree('nnodes', [
    flag(flags.nnodes, '--nnodes'),
    slurm('SLURM_NNODES', 1, 'nnodes'),
    torchCount === undefined
      ? null
      : { value: torchrunCount(torchCount), source: 'torchrun', as: `torchrun --nnodes ${torchCount}` },
  ]);
  const slurmJobId = env.SLURM_JOB_ID ? env.SLURM_JOB_ID : null;
  if (count === null) {
    if (rank !== null && rank.value !== 0)
      throw new SupervisorUsageError(`${rank.as} but no node count: pass --nnodes N`, { field: 'nnodes' });
    return { rank: 0, count: 1, source: 'single', slurmJobId };
  }
  if (rank === null && count.value > 1)
    throw new SupervisorUsageError(`${count.as} but no node rank: pass --node-rank R (0 leads)`, {
      field: 'nodeRank',
    });
  const r = rank?.value ?? 0;
  if (r >= count.value)
    throw new SupervisorUsageError(`${rank!.as} with ${count.as}: the rank must be below the node count`, {
      field: 'nodeRank',
    });
  return { rank: r, count: count.value, source: count.value === 1 ? 'single' : (rank ?? count).source, slurmJobId };
}
