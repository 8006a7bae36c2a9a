// soup probe --exec --try, the PyTorch twin of probe-try.test.ts's scenario (the known-cost trainer in python +
// torch), where `import torch` works. A file of its own so that it runs beside the Node twin's.
import { describe, it } from 'vitest';
import { TWIN_SCENARIO, TORCH_TWIN, twinScenario } from '../test/probe-try-helpers';
import { PYTHON, torchMissing } from '../test/run-helpers';

const torchReason = torchMissing();
if (torchReason) console.log(`skipped: the PyTorch twin scenarios (${torchReason})`);

// K (--time-steps): the timing runs' start-up jitter (python + torch is the larger) divided by K is the noise;
// measured under CI load with K = 12, two standard errors of the difference came to 38 % of the PyTorch twin's
// samples/s, a tie.
describe('[slow] soup probe --exec --try: PyTorch twin', { timeout: 600_000 }, () => {
  it.skipIf(torchReason !== null)(`PyTorch twin: ${TWIN_SCENARIO}`, () => twinScenario([PYTHON, TORCH_TWIN], 24));
});
