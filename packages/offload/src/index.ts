export { validateOffloadConfig } from './validate-offload-config';
export { checkOffloadConfig, type OffloadConfigParams, type OffloadConfigReport } from './check-offload-config';
export { ActivationStore, type ActivationStoreOptions, type ActivationHandle } from './activation-store';
export { withOffload, type WithOffloadOptions } from './with-offload';
export { currentActivationStore } from './current-activation-store';
export { sweepScratchFiles, type SweepScratchFilesParams } from './sweep-scratch-files';
export {
  OffloadError,
  OffloadConfigError,
  TensorFormatError,
  StoreClosedError,
  HandleError,
  ScratchFileMissingError,
  ScratchFileCorruptError,
  type OffloadErrorCode,
} from './errors';
export type {
  TensorDtype,
  TensorDataByDtype,
  TensorData,
  OffloadTensor,
  OffloadTarget,
  ActivationStoreStats,
} from './types';
export { memoryBackedFs } from './_fs-type';
