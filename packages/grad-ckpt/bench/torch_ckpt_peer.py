"""PyTorch peer of the grad-ckpt bench: the onnx-train bench model (same geometry, tanh-GELU,
pre-LayerNorm, tied embeddings, clip 1.0, AdamW), eager on CPU, with every block wrapped in
torch.utils.checkpoint (non-reentrant, as Hugging Face's gradient_checkpointing_kwargs) or not.
Measured like the onnx-train side: the steps' peak RSS (VmHWM, reset through
/proc/self/clear_refs) above the RSS after model and optimizer creation, and the median step.
The model, optimizer and step come from ../../onnx-train/bench/torch_peer.py (`setup`).

Usage: python3 torch_ckpt_peer.py '<json config>'  -> prints one JSON line.
"""
import gc
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "onnx-train", "bench"))
from torch_peer import setup  # noqa: E402  (the shared GPT definition)

cfg = json.loads(sys.argv[1])
torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)

CKPT = cfg["tier"] == "full"


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


step = setup(cfg, ckpt=CKPT)


gc.collect()
baseline = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
times = []
loss = float("nan")
for i in range(int(cfg["warmup"]) + int(cfg["steps"])):
    t0 = time.perf_counter()
    loss = step()
    if i >= int(cfg["warmup"]):
        times.append(time.perf_counter() - t0)
    gc.collect()
peak = status("VmHWM")
times.sort()
print(json.dumps({
    "torchVersion": torch.__version__,
    "threads": torch.get_num_threads(),
    "tier": cfg["tier"],
    "peakActivationMB": (peak - baseline) / 2**20,
    "stepMs": times[len(times) // 2] * 1000,
    "stepMsAll": [t * 1000 for t in times],
    "baselineMB": baseline / 2**20,
    "loss": loss,
}))
