// One error pattern across the repo: each package's errors extend its `<Package>Error` base, carry a
// code of that package's literal union, and no code is used by two packages or two classes. The code
// lists below must equal the unions (`satisfies Record<…, true>` fails the typecheck on a missing or
// extra code), so a code added to a union without a class, or to a class without the union, is caught.
import * as batchProbe from '@soup/batch-probe';
import type { BatchProbeErrorCode } from '@soup/batch-probe';
import * as config from '@soup/config';
import type { SoupConfigErrorCode } from '@soup/config';
import * as cudaProbe from '@soup/cuda-probe';
import type { CudaProbeErrorCode } from '@soup/cuda-probe';
import * as gradCkpt from '@soup/grad-ckpt';
import type { GradCkptErrorCode } from '@soup/grad-ckpt';
import * as hubCkpt from '@soup/hub-ckpt';
import type { HubCkptErrorCode } from '@soup/hub-ckpt';
import * as lossPlot from '@soup/loss-plot';
import type { LossPlotErrorCode } from '@soup/loss-plot';
import * as offload from '@soup/offload';
import type { OffloadErrorCode } from '@soup/offload';
import * as onnxTrain from '@soup/onnx-train';
import type { OnnxTrainErrorCode } from '@soup/onnx-train';
import * as plan from '@soup/plan';
import type { SoupPlanErrorCode } from '@soup/plan';
import * as supervisor from '@soup/supervisor';
import type { SupervisorErrorCode } from '@soup/supervisor';
import { describe, expect, it } from 'vitest';
import * as cliErrors from './errors';
import type { CliErrorCode } from './errors';
import * as cliIndex from './index';

type ErrorClass = abstract new (...args: never[]) => Error;

interface PackageErrors {
  name: string;
  /** Everything the package's index exports (the CLI: its index and its errors module). */
  exports: Record<string, unknown>;
  base: ErrorClass;
  codes: Record<string, true>;
  /** One or more instances of every exported error class, built as the package builds them. */
  samples: Record<string, () => Error | Error[]>;
}

const sha = 'a'.repeat(64);

const holder = { host: 'h', pid: 1, since: 's', run: 'r', expires_at: 'e' };

const PACKAGES: PackageErrors[] = [
  {
    name: '@soup/batch-probe',
    exports: batchProbe,
    base: batchProbe.BatchProbeError,
    codes: {
      SOUP_OOM: true,
      SOUP_NO_BATCH_FITS: true,
      SOUP_BATCH_INVALID_OPTION: true,
      SOUP_BATCH_INVALID_PROBE_OUTCOME: true,
      SOUP_BATCH_CACHE_LOCK_TIMEOUT: true,
      SOUP_BATCH_CACHE_WRITE: true,
      SOUP_BATCH_CACHE_CORRUPT: true,
    } satisfies Record<BatchProbeErrorCode, true>,
    samples: {
      OutOfMemoryError: () => new batchProbe.OutOfMemoryError('m'),
      NoBatchFitsError: () => new batchProbe.NoBatchFitsError(1, []),
      InvalidBatchOptionError: () => new batchProbe.InvalidBatchOptionError('m', { field: 'start' }),
      InvalidProbeOutcomeError: () => new batchProbe.InvalidProbeOutcomeError(1, null),
      CacheLockError: () => new batchProbe.CacheLockError('/tmp/x.lock', 10),
      CacheWriteError: () => new batchProbe.CacheWriteError('/tmp/x.json', new Error('EACCES')),
      CorruptCacheError: () => new batchProbe.CorruptCacheError('/tmp/x.json', 'not JSON'),
    },
  },
  {
    name: '@soup/config',
    exports: config,
    base: config.SoupConfigError,
    codes: {
      SOUP_CONFIG_INVALID: true,
      SOUP_CONFIG_NOT_FOUND: true,
    } satisfies Record<SoupConfigErrorCode, true>,
    samples: {
      ConfigError: () => [
        new config.ConfigError({ file: 'soup.yaml', issues: [] }),
        new config.ConfigError({ file: 'soup.yaml', issues: [], code: 'SOUP_CONFIG_NOT_FOUND' }),
      ],
    },
  },
  {
    name: '@soup/cuda-probe',
    exports: cudaProbe,
    base: cudaProbe.CudaProbeError,
    codes: {
      SOUP_PROBE_INVALID_OPTIONS: true,
      SOUP_PROBE_TIMEOUT: true,
      SOUP_PROBE_CHILD_FAILED: true,
      SOUP_DEVICE_QUERY_FAILED: true,
      SOUP_CGROUP_UNAVAILABLE: true,
      SOUP_PEER_DEPENDENCY_MISSING: true,
    } satisfies Record<CudaProbeErrorCode, true>,
    samples: {
      ProbeOptionsError: () => new cudaProbe.ProbeOptionsError('m', { field: 'timeoutMs' }),
      ProbeTimeoutError: () => new cudaProbe.ProbeTimeoutError(1, 1000, ''),
      ProbeChildError: () =>
        new cudaProbe.ProbeChildError('m', { batchSize: 1, exitCode: 1, signal: null, stderrTail: '' }),
      DeviceQueryError: () => new cudaProbe.DeviceQueryError('m'),
      MemoryCgroupUnavailableError: () => new cudaProbe.MemoryCgroupUnavailableError('not Linux'),
      PeerDependencyMissingError: () =>
        new cudaProbe.PeerDependencyMissingError('m', { packages: ['onnxruntime-node'] }),
    },
  },
  {
    name: '@soup/grad-ckpt',
    exports: gradCkpt,
    base: gradCkpt.GradCkptError,
    codes: {
      SOUP_GRAD_CKPT_BAD_GRANULARITY: true,
      SOUP_GRAD_CKPT_BAD_BUDGET_INPUT: true,
      SOUP_GRAD_CKPT_BAD_TIER: true,
    } satisfies Record<GradCkptErrorCode, true>,
    samples: {
      GranularityError: () => new gradCkpt.GranularityError('m', { granularity: 'coarse' }),
      BudgetPlanError: () => new gradCkpt.BudgetPlanError('m', { field: 'blocks' }),
      TierError: () => new gradCkpt.TierError('huge'),
    },
  },
  {
    name: '@soup/offload',
    exports: offload,
    base: offload.OffloadError,
    codes: {
      SOUP_OFFLOAD_CONFIG_INVALID: true,
      SOUP_OFFLOAD_BAD_TENSOR: true,
      SOUP_OFFLOAD_STORE_CLOSED: true,
      SOUP_OFFLOAD_BAD_HANDLE: true,
      SOUP_OFFLOAD_SCRATCH_MISSING: true,
      SOUP_OFFLOAD_SCRATCH_CORRUPT: true,
    } satisfies Record<OffloadErrorCode, true>,
    samples: {
      OffloadConfigError: () => new offload.OffloadConfigError('m'),
      TensorFormatError: () => new offload.TensorFormatError('m'),
      StoreClosedError: () => new offload.StoreClosedError('m'),
      HandleError: () => new offload.HandleError('m'),
      ScratchFileMissingError: () => new offload.ScratchFileMissingError('m', { path: '/tmp/a' }),
      ScratchFileCorruptError: () => new offload.ScratchFileCorruptError('m', { path: '/tmp/a' }),
    },
  },
  {
    name: '@soup/onnx-train',
    exports: onnxTrain,
    base: onnxTrain.OnnxTrainError,
    codes: {
      SOUP_ONNX_TRAIN_BAD_SPEC: true,
      SOUP_ONNX_TRAIN_EP_UNAVAILABLE: true,
      SOUP_ONNX_TRAIN_STEP_FAILED: true,
      SOUP_ONNX_TRAIN_BAD_INPUT: true,
      SOUP_SAFETENSORS_INVALID: true,
      SOUP_ONNX_TRAIN_CHECKPOINT_INVALID: true,
      SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH: true,
      SOUP_ONNX_TRAIN_BAD_DATA: true,
      SOUP_ONNX_TRAIN_NO_MEMORY_MEASUREMENT: true,
    } satisfies Record<OnnxTrainErrorCode, true>,
    samples: {
      GptSpecError: () => new onnxTrain.GptSpecError('m'),
      ExecutionProviderError: () => new onnxTrain.ExecutionProviderError('m', { provider: 'cuda' }),
      TrainStepError: () => new onnxTrain.TrainStepError('m'),
      TrainInputError: () => new onnxTrain.TrainInputError('m'),
      SafetensorsError: () => new onnxTrain.SafetensorsError('m'),
      CheckpointError: () => [
        new onnxTrain.CheckpointError('m', { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' }),
        new onnxTrain.CheckpointError('m', { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH' }),
      ],
      DataError: () => new onnxTrain.DataError('m'),
      MemoryMeasurementError: () => new onnxTrain.MemoryMeasurementError('m'),
    },
  },
  {
    name: '@soup/plan',
    exports: plan,
    base: plan.SoupPlanError,
    codes: { SOUP_PLAN_BUDGET_UNMEASURED: true, SOUP_PLAN_USAGE: true } satisfies Record<SoupPlanErrorCode, true>,
    samples: {
      BudgetUnmeasuredError: () => new plan.BudgetUnmeasuredError('m'),
      PlanUsageError: () => new plan.PlanUsageError('m'),
    },
  },
  {
    name: '@soup/hub-ckpt',
    exports: hubCkpt,
    base: hubCkpt.HubCkptError,
    codes: {
      SOUP_HUB_CKPT_INVALID_OPTION: true,
      SOUP_HUB_CKPT_STORE: true,
      SOUP_HUB_CKPT_AUTH: true,
      SOUP_HUB_CKPT_STALE_RUN: true,
      SOUP_HUB_CKPT_CORRUPT: true,
      SOUP_HUB_CKPT_VERIFY: true,
      SOUP_HUB_CKPT_CHECKSUM: true,
      SOUP_HUB_CKPT_UNSAFE_PATH: true,
      SOUP_HUB_CKPT_POINTED_CONFLICT: true,
      SOUP_HUB_CKPT_PULL_TARGET_EXISTS: true,
      SOUP_HUB_CKPT_CONCURRENT_WRITE: true,
      SOUP_HUB_CKPT_LINKED_ENTRY: true,
      SOUP_HUB_CKPT_POINTER_REGRESSION: true,
      SOUP_HUB_CKPT_UNSAFE_LINK: true,
      SOUP_HUB_CKPT_LEASE_HELD: true,
      SOUP_HUB_CKPT_LEASE_LOST: true,
      SOUP_HUB_CKPT_FOLDER_CONFLICT: true,
      SOUP_HUB_CKPT_DISK_FULL: true,
      SOUP_HUB_CKPT_COMMIT_QUOTA: true,
      SOUP_HUB_CKPT_STORE_MISSING: true,
      SOUP_HUB_CKPT_PULL_INTEGRITY: true,
    } satisfies Record<HubCkptErrorCode, true>,
    samples: {
      InvalidCheckpointOptionError: () => new hubCkpt.InvalidCheckpointOptionError('m', { field: 'pushEvery' }),
      StoreError: () => new hubCkpt.StoreError('m', { status: 500 }),
      HubAuthError: () => new hubCkpt.HubAuthError('m', { status: 401 }),
      StaleRunError: () => new hubCkpt.StaleRunError({ pointerRun: 'a', run: 'b', pointerStep: 1, where: 'w' }),
      CorruptCheckpointError: () => new hubCkpt.CorruptCheckpointError('m', { pathInRepo: 'p', problems: [] }),
      VerifyError: () => new hubCkpt.VerifyError({ pathInRepo: 'p', problems: ['x'] }),
      ChecksumError: () =>
        new hubCkpt.ChecksumError({
          pathInRepo: 'p',
          file: 'f',
          expectedSha256: sha,
          actualSha256: sha,
          expectedBytes: 1,
          actualBytes: 2,
        }),
      UnsafePathError: () => new hubCkpt.UnsafePathError('../x', 'it leaves its folder'),
      PointedCheckpointConflictError: () => new hubCkpt.PointedCheckpointConflictError('ckpt/checkpoint-1'),
      PullTargetExistsError: () => new hubCkpt.PullTargetExistsError('/tmp/d'),
      ConcurrentWriteError: () => new hubCkpt.ConcurrentWriteError({ path: 'latest.json', writer: 'x', where: 'w' }),
      LinkedEntryError: () => new hubCkpt.LinkedEntryError('/tmp/l'),
      PointerRegressionError: () =>
        new hubCkpt.PointerRegressionError({
          where: 'w',
          from: { step: 2, path_in_repo: 'ckpt/checkpoint-2', terminal: false },
          toStep: 1,
          toPath: 'ckpt/checkpoint-1',
          terminal: false,
        }),
      UnsafeLinkError: () => new hubCkpt.UnsafeLinkError({ link: 'a', target: 'a', reason: 'loop' }),
      LeaseHeldError: () => new hubCkpt.LeaseHeldError({ where: 'w', holder }),
      LeaseLostError: () => new hubCkpt.LeaseLostError({ where: 'w', lease: { id: 'l', expires_at: 'e' } }),
      FolderConflictError: () =>
        new hubCkpt.FolderConflictError({
          where: 'w',
          pathInRepo: 'p',
          theirRun: null,
          theirSha256: sha,
          mineSha256: sha,
        }),
      DiskFullError: () => new hubCkpt.DiskFullError({ path: '/tmp', bytesNeeded: null, what: 'a push' }),
      CommitQuotaError: () => new hubCkpt.CommitQuotaError({ url: 'u', retryAfterMs: 1000, message: 'm' }),
      StoreMissingError: () => new hubCkpt.StoreMissingError('dir /tmp/x'),
      PullIntegrityError: () => new hubCkpt.PullIntegrityError('m', {}),
    },
  },
  {
    name: '@soup/loss-plot',
    exports: lossPlot,
    base: lossPlot.LossPlotError,
    codes: {
      SOUP_LOSS_PLOT_PNG_UNSUPPORTED: true,
    } satisfies Record<LossPlotErrorCode, true>,
    samples: {
      PngUnsupportedError: () => new lossPlot.PngUnsupportedError('m'),
    },
  },
  {
    name: '@soup/supervisor',
    exports: supervisor,
    base: supervisor.SupervisorError,
    codes: {
      SOUP_SUPERVISOR_USAGE: true,
      SOUP_SUPERVISOR_LOCKED: true,
      SOUP_SUPERVISOR_RESUME_REFUSED: true,
      SOUP_SUPERVISOR_MICRO_AGREEMENT: true,
    } satisfies Record<SupervisorErrorCode, true>,
    samples: {
      SupervisorUsageError: () => new supervisor.SupervisorUsageError('m', { field: 'checkpointGlob' }),
      OutputLockedError: () => new supervisor.OutputLockedError('m', { lockPath: '/tmp/l', pid: 1 }),
      StaleRecordError: () => new supervisor.StaleRecordError('m'),
      MicroAgreementError: () => new supervisor.MicroAgreementError('m', { missingRanks: [1] }),
    },
  },
  {
    name: '@soup/cli',
    // The CLI's own errors: its index and its errors module.
    exports: { ...cliIndex, ...cliErrors },
    base: cliErrors.CliError,
    codes: {
      SOUP_USAGE: true,
      SOUP_HUB_TOKEN_MISSING: true,
      SOUP_TRAIN_FAILED: true,
      SOUP_INTERRUPTED: true,
      SOUP_RESUME_REFUSED: true,
    } satisfies Record<CliErrorCode, true>,
    samples: {
      UsageError: () => new cliErrors.UsageError('m'),
      TokenMissingError: () => new cliErrors.TokenMissingError('m'),
      TrainRunError: () => new cliErrors.TrainRunError('m'),
      InterruptedError: () => new cliErrors.InterruptedError(),
      ResumeRefusedError: () => new cliErrors.ResumeRefusedError('m'),
    },
  },
];

/** The exported classes whose name ends in `Error` (not helpers such as `isDiskFull`), base included. */
function errorClasses(exports: Record<string, unknown>): [string, ErrorClass][] {
  return Object.entries(exports).filter(
    (e): e is [string, ErrorClass] => /^[A-Z]\w*Error$/.test(e[0]) && typeof e[1] === 'function',
  );
}

function instances(p: PackageErrors, name: string): Error[] {
  const make = p.samples[name];
  if (make === undefined) throw new Error(`${p.name}: no sample for ${name}; add one to this test`);
  return [make()].flat();
}

describe.each(PACKAGES)('$name errors', (p) => {
  const baseName = p.base.name;

  it('has a base named after the package, taking (message, {code, cause})', () => {
    expect(baseName).toMatch(/^[A-Z]\w*Error$/);
    expect(p.exports[baseName]).toBe(p.base);
    const cause = new Error('the cause');
    const code = Object.keys(p.codes)[0];
    const Base = p.base as unknown as new (message: string, options: { code: string; cause?: unknown }) => Error;
    const err = new Base('what went wrong', { code: code!, cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe('what went wrong');
    expect(err.name).toBe(baseName);
    expect((err as Error & { code: unknown }).code).toBe(code);
    expect(err.cause).toBe(cause);
  });

  it('every exported *Error class extends the base, is named and carries a code of the union', () => {
    const classes = errorClasses(p.exports).filter(([name]) => name !== baseName);
    expect(classes.length).toBeGreaterThan(0);
    expect(Object.keys(p.samples).sort()).toEqual(classes.map(([name]) => name).sort());
    const used = new Set<string>();
    for (const [name, cls] of classes) {
      expect(cls.prototype, `${name} extends ${baseName}`).toBeInstanceOf(p.base);
      for (const err of instances(p, name)) {
        expect(err).toBeInstanceOf(cls);
        expect(err.name).toBe(name);
        const code = (err as Error & { code: unknown }).code;
        expect(Object.keys(p.codes), `${name}.code`).toContain(code);
        used.add(code as string);
      }
    }
    // No code of the union is left without a class that throws it.
    expect([...used].sort()).toEqual(Object.keys(p.codes).sort());
  });
});

describe('error codes across the repo', () => {
  it('are SOUP_ codes, and no two packages or two classes share one', () => {
    const owner = new Map<string, string>();
    const clashes: string[] = [];
    for (const p of PACKAGES) {
      for (const [name] of errorClasses(p.exports).filter(([n]) => n !== p.base.name)) {
        const codes = new Set(instances(p, name).map((e) => (e as Error & { code: string }).code));
        for (const code of codes) {
          expect(code).toMatch(/^SOUP_[A-Z0-9_]+$/);
          const where = `${p.name} ${name}`;
          const first = owner.get(code);
          if (first !== undefined) clashes.push(`${code}: ${first} and ${where}`);
          else owner.set(code, where);
        }
      }
    }
    expect(clashes.join('\n')).toBe('');
  });
});
