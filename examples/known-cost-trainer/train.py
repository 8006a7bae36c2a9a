#!/usr/bin/env python3
"""The PyTorch twin of train.mjs: a trainer whose costs are known by construction.

memory: it holds micro_batch_size x per_sample_mib x ckpt_memory MiB in a torch tensor (touched)
time:   every step takes step_ms + micro_batch_size x sample_ms x ckpt_time (a sleep)
        + micro_batch_size^2 x sample_sq_ms (default 0: a step whose cost grows faster than m)
ckpt_memory / ckpt_time apply with --grad_ckpt true (default 0.5 and 1.3).
--stop_after N runs at most N steps whatever --max_steps says (0: no cap); --grow_per_sample_mib X
holds micro_batch_size x X MiB more at every step after the first (a data-dependent peak).
    python3 train.py --micro_batch_size 4 --grad_ckpt false --max_steps 9
"""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--micro_batch_size", "--per_device_train_batch_size", type=int, default=1)
p.add_argument("--gradient_accumulation_steps", type=int, default=1)  # does not change a step's cost here
p.add_argument("--max_steps", type=int, default=1)
p.add_argument("--grad_ckpt", choices=["true", "false"], default="false")
p.add_argument("--per_sample_mib", type=float, default=24)
p.add_argument("--ckpt_memory", type=float, default=0.5)
p.add_argument("--step_ms", type=float, default=20)
p.add_argument("--sample_ms", type=float, default=20)
p.add_argument("--sample_sq_ms", type=float, default=0)
p.add_argument("--ckpt_time", type=float, default=1.3)
p.add_argument("--stop_after", type=int, default=0)
p.add_argument("--grow_per_sample_mib", type=float, default=0)
a = p.parse_args()
ckpt = a.grad_ckpt == "true"
mib = a.micro_batch_size * a.per_sample_mib * (a.ckpt_memory if ckpt else 1)
step_s = (
    a.step_ms + a.micro_batch_size * a.sample_ms * (a.ckpt_time if ckpt else 1) + a.micro_batch_size**2 * a.sample_sq_ms
) / 1000
held = torch.ones(int(mib * 2**20) // 4, dtype=torch.float32)  # touched: resident
steps = min(a.max_steps, a.stop_after) if a.stop_after > 0 else a.max_steps
grown = []
for s in range(1, steps + 1):
    if s > 1 and a.grow_per_sample_mib > 0:
        grown.append(torch.ones(int(a.micro_batch_size * a.grow_per_sample_mib * 2**20) // 4, dtype=torch.float32))
    time.sleep(step_s)
    held_bytes = held.numel() * 4 + sum(g.numel() * 4 for g in grown)
    print(f"step {s} micro_batch_size {a.micro_batch_size} grad_ckpt {str(ckpt).lower()} held {held_bytes}", flush=True)
