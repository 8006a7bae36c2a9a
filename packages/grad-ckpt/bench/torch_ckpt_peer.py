"""PyTorch peer of the grad-ckpt bench: the onnx-train bench model (same geometry, tanh-GELU,
pre-LayerNorm, tied embeddings, clip 1.0, AdamW), eager on CPU, with every block wrapped in
torch.utils.checkpoint (non-reentrant, as Hugging Face's gradient_checkpointing_kwargs) or not.
Measured like the onnx-train side: the steps' peak RSS (VmHWM, reset through
/proc/self/clear_refs) above the RSS after model and optimizer creation, and the median step.

Usage: python3 torch_ckpt_peer.py '<json config>'  -> prints one JSON line.
"""
import gc
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

cfg = json.loads(sys.argv[1])
torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)

V, T, D, H, L, FF = (int(cfg[k]) for k in ("vocabSize", "seqLen", "dModel", "nHeads", "nLayers", "dFF"))
B = int(cfg["batchSize"])
CKPT = cfg["tier"] == "full"


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.ln_2 = nn.LayerNorm(D)
        self.c_fc = nn.Linear(D, FF)
        self.mlp_proj = nn.Linear(FF, D)
        self.register_buffer("mask", torch.full((T, T), float("-inf")).triu(1))

    def attn(self, a):
        q, k, v = self.c_attn(a).split(D, dim=2)
        q = q.view(B, T, H, D // H).transpose(1, 2)
        k = k.view(B, T, H, D // H).transpose(1, 2)
        v = v.view(B, T, H, D // H).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H)) + self.mask
        o = F.softmax(s, dim=-1) @ v
        return self.c_proj(o.transpose(1, 2).reshape(B, T, D))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(T, D)
        self.h = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = nn.LayerNorm(D)

    def forward(self, ids, labels):
        x = self.wte(ids) + self.wpe.weight
        for blk in self.h:
            x = checkpoint(blk, x, use_reentrant=False) if CKPT else blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V), labels.view(-1))


model = GPT()
for name, p in model.named_parameters():
    if p.dim() >= 2:
        nn.init.normal_(p, 0.0, 0.02)
decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "wte" not in n and "wpe" not in n]
no_decay = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "wte" not in n and "wpe" not in n)]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
g = torch.Generator().manual_seed(1)
ids = torch.randint(0, V, (B, T), generator=g)
labels = torch.randint(0, V, (B, T), generator=g)


def step():
    opt.zero_grad(set_to_none=True)
    loss = model(ids, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


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
