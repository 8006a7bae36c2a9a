// Which errors are an allocation failure a smaller micro-batch can answer.
import { TrainStepError } from '@soup/onnx-train';
import { describe, expect, it } from 'vitest';
import { stepOomLine, trainerOomLine } from './out-of-memory-line';

const ORT_OOM =
  'training step failed at batch size 16: Non-zero status code returned while running Gemm node. Status Message: ' +
  'bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 67108864';

describe('stepOomLine', () => {
  it(
    'names the allocation failure a smaller micro-batch can answer (the supervisor then steps m down), and ' +
      'nothing else',
    () => {
      expect(
        stepOomLine(new TrainStepError('training step failed at batch size 4: Invalid input name: input_ids')),
      ).toBeNull();
      // A step that had begun to update its parameters cannot be redone.
      expect(stepOomLine(new TrainStepError(ORT_OOM, { stateChanged: true }))).toBeNull();
      expect(stepOomLine(new TrainStepError(ORT_OOM))).toMatch(/Failed to allocate memory/);
    },
  );
});

describe('trainerOomLine', () => {
  it('names the out-of-memory line a trainer raised, and nothing for any other failure', () => {
    const exit = (stderr: string) => ({ stdoutTail: [], stderrTail: stderr.split('\n'), code: 1, signal: null });
    expect(trainerOomLine(exit('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'))).toMatch(
      /CUDA out of memory/,
    );
    expect(trainerOomLine(exit('ValueError: bad shape'))).toBeNull();
  });
});
