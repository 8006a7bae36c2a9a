// glibc's malloc hands a block above its mmap threshold (128 KiB at start) to the kernel on free,
// and trims the top of the heap back to the kernel once more than its trim threshold (twice the
// mmap threshold) is free there. A training step allocates and frees hundreds of MiB of output
// copies a step (onnxruntime-node returns every output as a new ArrayBuffer; the segmented step
// frees each as soon as it is dead), so with the start-up thresholds that memory went back to the
// kernel and was faulted in again, page by page, every step: measured on the offload bench's
// disk step at batch 20, 405,752 minor faults and 5.4 s of system time in 6 steps, 1,436 ms a step.
//
// glibc raises both thresholds by itself when a block it mapped is freed: the mmap threshold
// becomes that block's size (at most 32 MiB on 64-bit, DEFAULT_MMAP_THRESHOLD_MAX; see
// mallopt(3), M_MMAP_THRESHOLD). Freeing one 32 MiB block at start-up therefore keeps blocks up
// to 32 MiB on the heap and trims only past 64 MiB of free top: 51,926 faults, 535 ms a step. The
// block is never touched, so no page of it is resident. Elsewhere (musl, macOS) it is a no-op.
import { releaseBuffers } from './_release-buffers';

/**
 * The largest block glibc (64-bit) takes as its new mmap threshold: 32 MiB, less the chunk header and page rounding.
 */
export const MMAP_THRESHOLD_BLOCK_BYTES = 32 * 1024 * 1024 - 64 * 1024;

let raised = false;

/** Frees one mapped 32 MiB block, once per process (see above). */
export function raiseMallocThresholds(): void {
  if (raised) return;
  raised = true;
  if (process.platform !== 'linux') return;
  releaseBuffers([new Uint8Array(new ArrayBuffer(MMAP_THRESHOLD_BLOCK_BYTES))]);
}
