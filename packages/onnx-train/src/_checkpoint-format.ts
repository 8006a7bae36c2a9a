import type { FloatDType } from './_graph';

/** `trainer_state.json`'s `format`: a checkpoint soup's trainer can resume. */
export const STATE_FORMAT = 'soup-onnx-train-checkpoint/1';
/** The files a checkpoint needs to resume. */
export const CHECKPOINT_FILES = ['model.safetensors', 'optimizer.safetensors', 'trainer_state.json'] as const;
/** Written beside them so the folder loads outside soup (transformers' GPT-2). */
export const EXPORT_FILES = ['config.json', 'generation_config.json'] as const;

/** The safetensors dtype of a parameter dtype. */
export function safetensorsDtype(dtype: FloatDType): 'F32' | 'F64' {
  return dtype === 'float64' ? 'F64' : 'F32';
}
