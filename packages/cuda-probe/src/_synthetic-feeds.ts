// Plans the synthetic batch of an ORT probe from the session's input metadata. Pure: the
// worker turns a plan into onnxruntime tensors, the tests read the plan directly.

/** The part of onnxruntime's `InferenceSession.ValueMetadata` the plan reads. */
export interface InputMetadata {
  name: string;
  isTensor: boolean;
  type?: string;
  shape?: ReadonlyArray<number | string>;
}

export type FeedFill =
  | { kind: 'constant'; value: number }
  /** 0, 1, … along the last axis (position ids). */
  | { kind: 'arange' };

export interface FeedPlan {
  name: string;
  /** onnxruntime tensor type: int64, int32, float32, float16, bool, … */
  type: string;
  dims: number[];
  fill: FeedFill;
  /** Whether a dimension of this input is the batch (its bytes grow with the batch size). */
  batched: boolean;
}

export interface PlanFeedsOptions {
  batchSize: number;
  maxLength: number;
  padId: number;
  vocabSize: number;
  /** Inputs fed this constant instead of the rule's fill (the training graph's `lr`, `step`). */
  overrides?: Readonly<Record<string, number>>;
}

export interface PlannedFeeds {
  feeds: FeedPlan[];
  /** Things the plan had to guess (a third symbolic dim set to 1, …), for the outcome's detail. */
  notes: string[];
}

const INTEGER_TYPES = new Set(['int64', 'int32', 'int16', 'int8', 'uint64', 'uint32', 'uint16', 'uint8']);
const FLOAT_TYPES = new Set(['float32', 'float16', 'float64', 'bfloat16']);

/** Bytes per element of the types a plan can hold. */
export const BYTES_PER_ELEMENT: Readonly<Record<string, number>> = {
  int64: 8,
  uint64: 8,
  float64: 8,
  int32: 4,
  uint32: 4,
  float32: 4,
  int16: 2,
  uint16: 2,
  float16: 2,
  bfloat16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
};

/**
 * One feed per model input. In each input's shape the first symbolic dimension is the batch,
 * the second the sequence (`maxLength`); any further symbolic dimension is 1 (noted); fixed
 * dimensions are used as declared. Integer inputs: `input_ids` and `labels` hold
 * `padId % vocabSize`, `attention_mask` ones, `position_ids` 0…n-1 along the last axis,
 * `token_type_ids` and any other integer input zeros. Float inputs hold zeros; bool inputs
 * false, except `*mask*` inputs (true). `overrides` wins over all of these.
 */
export function planFeeds(inputs: readonly InputMetadata[], opts: PlanFeedsOptions): PlannedFeeds {
  const notes: string[] = [];
  const pad = ((opts.padId % opts.vocabSize) + opts.vocabSize) % opts.vocabSize;
  const feeds = inputs.map((input): FeedPlan => {
    if (!input.isTensor || input.type === undefined) {
      throw new Error(`model input "${input.name}" is not a tensor; the ORT probe can only feed tensor inputs`);
    }
    const type = input.type;
    let symbolic = 0;
    const dims = (input.shape ?? []).map((d) => {
      if (typeof d === 'number' && d >= 0) return d;
      symbolic += 1;
      if (symbolic === 1) return opts.batchSize;
      if (symbolic === 2) return opts.maxLength;
      notes.push(`input "${input.name}": symbolic dimension ${JSON.stringify(d)} set to 1`);
      return 1;
    });
    const name = input.name;
    let fill: FeedFill;
    const override = opts.overrides?.[name];
    if (override !== undefined && (INTEGER_TYPES.has(type) || FLOAT_TYPES.has(type) || type === 'bool')) {
      fill = { kind: 'constant', value: override };
    } else if (INTEGER_TYPES.has(type)) {
      if (name === 'input_ids' || name === 'labels') fill = { kind: 'constant', value: pad };
      else if (name === 'attention_mask') fill = { kind: 'constant', value: 1 };
      else if (name === 'position_ids') fill = { kind: 'arange' };
      else fill = { kind: 'constant', value: 0 };
    } else if (FLOAT_TYPES.has(type)) {
      fill = { kind: 'constant', value: 0 };
    } else if (type === 'bool') {
      fill = { kind: 'constant', value: /mask/i.test(name) ? 1 : 0 };
    } else {
      throw new Error(
        `model input "${name}" has type ${type}; the ORT probe feeds integer, float and bool tensors only`,
      );
    }
    return { name, type, dims, fill, batched: symbolic >= 1 };
  });
  return { feeds, notes };
}

/** Total bytes of a plan's tensors (only those that grow with the batch, with `batchedOnly`). */
export function planBytes(feeds: readonly FeedPlan[], batchedOnly = false): number {
  return feeds
    .filter((f) => !batchedOnly || f.batched)
    .reduce((sum, f) => sum + f.dims.reduce((a, b) => a * b, 1) * (BYTES_PER_ELEMENT[f.type] ?? 8), 0);
}
