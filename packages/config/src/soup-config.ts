import type { DeviceSpec } from './parse-device';
import type { ConfigIssue } from './errors';

/** A gradient checkpointing setting as written in soup.yaml. */
export type GradCkptSetting = boolean | null | 'full' | 'medium' | 'selective' | 'auto' | 'budget';

/** soup.yaml after validation, defaults filled, paths resolved. */
export interface SoupConfig {
  /** Absolute path of the soup.yaml this came from. */
  file: string;
  base: string;
  model: {
    vocabSize: number;
    dModel: number;
    nHeads: number;
    nLayers: number;
    dFF: number;
    tieEmbeddings: boolean;
  };
  data: {
    /** Absolute path of the training text. */
    trainPath: string;
    /** Absolute path of the validation text, or null. */
    valPath: string | null;
    maxLength: number;
  };
  training: {
    steps: number;
    /** G: sequences per optimizer step (fixed for the run, part of its fingerprint). */
    batchSize: number;
    /** m: sequences per forward/backward, a divisor of batchSize; auto: the largest that fits. */
    microBatchSize: 'auto' | number;
    /** Fraction of the budget a micro-batch's measured peak must leave free (0: none). */
    memoryHeadroom: number;
    autoBatchSizeStrategy: 'auto' | 'probe' | 'static';
    staticBatchSize: number;
    lr: number;
    /**
     * `schedule_steps`: the cosine schedule's horizon; null: `steps`. A run extended past its steps keeps it (and so
     * its fingerprint); past it the learning rate stays at its minimum.
     */
    scheduleSteps: number | null;
    warmupSteps: number;
    weightDecay: number;
    gradClip: number;
    seed: number;
    valBatches: number;
    threads: number;
    memoryBudgetBytes: number | null;
    gradientCheckpointing: GradCkptSetting;
    activationOffloading: 'cpu' | 'disk' | 'auto' | null;
    /** Absolute scratch directory for disk offload, or null (the CLI picks one under the output dir). */
    activationOffloadingDir: string | null;
    quantization: 'none' | '4bit' | '8bit';
    loraR: number;
    /** `time_limit` in ms: each session ends (saving and pushing its step) after this long; null for none. */
    timeLimitMs: number | null;
  };
  device: DeviceSpec;
  hub: {
    repo: string | null;
    repoType: 'model' | 'dataset';
    private: boolean;
    pushEverySteps: number | null;
    keepLocal: number;
    keepRemote: number | null;
    /** hub.squash_history: `'auto'` past 500 commits, `true` after each prune, `false` never. */
    squashHistory: boolean | 'auto';
    /** hub.min_commit_interval in ms; absent: the store's default (5 min on the Hub, 0 on a directory). */
    minCommitIntervalMs?: number;
    /** hub.lease_ttl in ms; absent: the store's default (2 min on a directory, 10 min on the Hub). */
    leaseTtlMs?: number;
    endpoint: string | null;
  };
  /** Absolute output directory. */
  output: string;
  /** Line (1-based) of every field written in the file, by dotted path, for later error messages. */
  lines: Record<string, number>;
}

/** Options of {@link validateConfig}. */
export interface ValidateConfigOptions {
  /** The YAML text. */
  text: string;
  /** Absolute path of the file (data paths resolve against its folder). */
  file: string;
  /** Directory `output` and the offload dir resolve against. @default process.cwd() */
  cwd?: string;
  /**
   * Checks that a data file exists (absolute path in, true when it is a readable file).
   * @default no check
   */
  isFile?: (absPath: string) => boolean;
  /** Whether a data path that is not a file is a directory, so the error says so. @default never */
  isDirectory?: (absPath: string) => boolean;
}

/** What {@link validateConfig} found. `config` is set only when there are no errors. */
export interface ValidateConfigResult {
  config: SoupConfig | null;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
}
