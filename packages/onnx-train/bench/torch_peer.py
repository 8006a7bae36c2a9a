"""PyTorch peer for the @soup/onnx-train bench: the same GPT geometry and training step
(tanh-GELU, pre-LayerNorm, tied embeddings, clip 1.0, AdamW), eager mode on CPU.

Usage: python3 torch_peer.py '<json config>'  -> prints one JSON line.
Also imported by @soup/grad-ckpt's bench/torch_ckpt_peer.py (`setup`), so the model lives once.
"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, T, D, H, FF, B):
        super().__init__()
        self.T, self.D, self.H, self.B = T, D, H, B
        self.ln_1 = nn.LayerNorm(D)
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.ln_2 = nn.LayerNorm(D)
        self.c_fc = nn.Linear(D, FF)
        self.mlp_proj = nn.Linear(FF, D)
        self.register_buffer("mask", torch.full((T, T), float("-inf")).triu(1))

    def attn(self, a):
        T, D, H, B = self.T, self.D, self.H, self.B
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
    """`ckpt`: wrap every block in torch.utils.checkpoint (non-reentrant)."""

    def __init__(self, V, T, D, H, L, FF, B, ckpt=False):
        super().__init__()
        self.V, self.ckpt = V, ckpt
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(T, D)
        self.h = nn.ModuleList([Block(T, D, H, FF, B) for _ in range(L)])
        self.ln_f = nn.LayerNorm(D)

    def forward(self, ids, labels):
        x = self.wte(ids) + self.wpe.weight
        for blk in self.h:
            x = checkpoint(blk, x, use_reentrant=False) if self.ckpt else blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, self.V), labels.view(-1))


def dims(cfg):
    """(V, T, D, H, L, FF, B) of a bench config."""
    return tuple(int(cfg[k]) for k in ("vocabSize", "seqLen", "dModel", "nHeads", "nLayers", "dFF", "batchSize"))


def setup(cfg, ckpt=False):
    """The model (N(0, 0.02) matrices), AdamW with decay on the block matrices, one fixed batch
    (generator seed 1) and the training step. Seed torch's global RNG before calling."""
    V, T, D, H, L, FF, B = dims(cfg)
    model = GPT(V, T, D, H, L, FF, B, ckpt)
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

    return step


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def gemm_gflops(n=1024, reps=6):
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def main():
    cfg = json.loads(sys.argv[1])
    torch.set_num_threads(int(cfg["threads"]))
    torch.manual_seed(int(cfg.get("seed", 0)))
    V, T, D, H, L, FF, B = dims(cfg)
    step = setup(cfg)
    baseline_mb = peak_rss_mb()

    for _ in range(int(cfg.get("warmup", 2))):
        step()
    times = []
    deadline = time.perf_counter() + float(cfg.get("maxSeconds", 30))
    for _ in range(int(cfg.get("steps", 10))):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            break
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({
        "torchVersion": torch.__version__,
        "threads": torch.get_num_threads(),
        "steps": len(times),
        "stepMsMedian": median * 1000,
        "tokensPerSec": B * T / median,
        "peakRssMB": peak_rss_mb(),
        "baselineRssMB": baseline_mb,
        "gemmGflops": gemm_gflops(),
        "loss": loss,
    }))


if __name__ == "__main__":
    main()
