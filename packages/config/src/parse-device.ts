/** A device as a flag or soup.yaml names it: `cpu`, `cuda` or `cuda:N` (`id` 0 unless given). */
export interface DeviceSpec {
  kind: 'cpu' | 'cuda';
  id: number;
  /** As written. */
  spec: string;
}

/** Parses `cpu`, `cuda` or `cuda:N`; undefined when the text names no device. */
export function parseDevice(text: string): DeviceSpec | undefined {
  if (text === 'cpu') return { kind: 'cpu', id: 0, spec: text };
  const cuda = /^cuda(?::(\d+))?$/.exec(text);
  if (cuda === null) return undefined;
  return { kind: 'cuda', id: cuda[1] === undefined ? 0 : Number(cuda[1]), spec: text };
}
