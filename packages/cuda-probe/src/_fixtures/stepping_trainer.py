# The torch twin of stepping-trainer.mjs: at most CAP of its STEPS are training steps (a tiny
# linear layer, forward, backward, SGD), the rest evaluations; argv STEPS CAP [STATE_DIR] [STEP_MS].
import json
import os
import sys
import time

import torch

steps, cap = int(sys.argv[1]), int(sys.argv[2])
state_dir = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
step_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 1)
ran = 0
for i in range(1, steps + 1):
    until = time.monotonic() + step_ms / 1000
    if i <= cap:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ran = i
        word = "step"
    else:
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(model(x), y)
        word = "eval"
    while time.monotonic() < until:
        pass
    print(f"[rank0]: {word} {i} loss {loss.item():.4f}", flush=True)
if state_dir:
    out = os.path.join(state_dir, f"checkpoint-{ran}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "trainer_state.json"), "w") as f:
        json.dump({"global_step": ran, "max_steps": steps}, f)
