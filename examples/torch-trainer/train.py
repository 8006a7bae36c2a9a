#!/usr/bin/env python3
"""A small PyTorch trainer with the command line of an HF Trainer script: a GPT-ish character model
on a tiny text, deterministic on CPU (torch.manual_seed, torch.use_deterministic_algorithms, 1 thread).

It saves HF-style checkpoint-<step>/ folders (model.safetensors, optimizer.pt, rng_state.pt and
trainer_state.json, written in place with trainer_state.json last, as HF Trainer does), resumes from
--resume_from_checkpoint, saves the current step on SIGTERM and exits 0, and writes the finished model
at the top of --output_dir.

    python3 examples/torch-trainer/train.py --output_dir out --per_device_train_batch_size 8 \
        --max_steps 60 --save_steps 10 [--resume_from_checkpoint out/checkpoint-30]

--gradient_accumulation_steps a: each optimizer step draws m × a samples and accumulates a micro-batches of m
(the loss averaged over all of them), so any m × a' = m × a trains the same weights.

Test knobs (environment, so they stay out of the run fingerprint): SOUP_EXAMPLE_CAPACITY=C or S:C (from step S
on, a micro-batch above C samples asks torch for far more memory than the machine has: torch's real
"DefaultCPUAllocator: can't allocate memory" RuntimeError, uncaught), SOUP_EXAMPLE_STEP_DELAY_MS, SOUP_EXAMPLE_FAULT=stop-at:S,
exit:S:C (exit with code C after step S), early-stop:S (stop at step S as HF's EarlyStoppingCallback does: the
saved trainer_state.json says should_training_stop), link-in-save (a dangling symbolic link in every checkpoint).

Data parallel (torchrun's environment: WORLD_SIZE > 1, RANK, MASTER_ADDR, MASTER_PORT; gloo): every rank draws the
same m × a × WORLD_SIZE samples and trains its run of m × a of them, the loss scaled by 1 / (a × WORLD_SIZE); the
gradients are summed across ranks (all_reduce) before the optimizer step, so the weights match one process at the
same global batch to float rounding. Only rank 0 writes checkpoints and the final model; every rank resumes from
--resume_from_checkpoint. Each step the ranks all-reduce a stop flag: a SIGTERM on any rank stops all of them after
the same step, and rank 0 saves it. examples/launch-ranks.mjs starts N ranks with that environment.
--save_total_limit n (HF Trainer's flag): after each checkpoint-<step>/ save, the oldest folders beyond n are deleted
at once with shutil.rmtree, as HF's _rotate_checkpoints does; 0 keeps them all.

Under soup:  soup run --repo file://ckpt --batch-size 8 -- python3 examples/torch-trainer/train.py \
    --output_dir {output_dir} --per_device_train_batch_size {batch_size} --resume_from_checkpoint {resume_from}
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = "".join(
    f"Line {i}: the soup simmers while the trainer saves its state and resumes where it stopped.\n" for i in range(40)
)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--output_dir", default="output")
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=60)
    p.add_argument("--save_steps", type=int, default=10)
    p.add_argument("--save_total_limit", type=int, default=0)
    p.add_argument("--resume_from_checkpoint", default=None)
    p.add_argument("--learning_rate", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seq_len", type=int, default=32)
    p.add_argument("--d_model", type=int, default=64)
    p.add_argument("--n_layers", type=int, default=2)
    # float64: the weights of m × a and m' × a' agree to float32 rounding (float32 accumulation order differs)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    # folder: HF-style checkpoint-<step>/; file: Lightning-style {output_dir}/epoch=0-step=<step>.ckpt (one torch.save)
    p.add_argument("--checkpoint_format", choices=["folder", "file"], default="folder")
    return p.parse_args()


class Block(nn.Module):
    def __init__(self, d, n_heads, seq_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.n_heads = n_heads
        self.register_buffer("mask", torch.tril(torch.ones(seq_len, seq_len)).bool(), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn(self.ln1(x)).split(d, dim=2)
        h = self.n_heads
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d, n_layers, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList([Block(d, 2, seq_len) for _ in range(n_layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def save_safetensors(path, tensors):
    """A safetensors file written by hand (no extra package): header length, JSON header, raw bytes."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        t = t if t.dtype == torch.float64 else t.to(torch.float32)
        data = t.numpy().tobytes()
        header[name] = {"dtype": "F64" if t.dtype == torch.float64 else "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    import numpy as np

    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        dtype = np.float64 if meta["dtype"] == "F64" else np.float32
        out[name] = torch.from_numpy(np.frombuffer(body[a:b], dtype=dtype).copy()).reshape(meta["shape"])
    return out


def lr_at(step, args):
    warmup = 2
    if step < warmup:
        return args.learning_rate * (step + 1) / warmup
    progress = (step - warmup) / max(1, args.max_steps - warmup)
    return args.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def main():
    args = parse_args()
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method="env://", world_size=world, rank=rank)
    torch.manual_seed(args.seed)
    if args.dtype == "float64":
        torch.set_default_dtype(torch.float64)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    data = torch.tensor(list(TEXT.encode()), dtype=torch.long)
    model = TinyGPT(256, args.d_model, args.n_layers, args.seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    gen = torch.Generator().manual_seed(args.seed)
    step = 0
    if args.resume_from_checkpoint and os.path.isfile(args.resume_from_checkpoint):
        ck = args.resume_from_checkpoint
        state = torch.load(ck)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["rng"]["generator"])
        torch.set_rng_state(state["rng"]["cpu"])
        step = state["global_step"]
        print(f"trainer: resumed from {ck} at step {step}", flush=True)
    elif args.resume_from_checkpoint:
        ck = args.resume_from_checkpoint
        model.load_state_dict(load_safetensors(os.path.join(ck, "model.safetensors")))
        opt.load_state_dict(torch.load(os.path.join(ck, "optimizer.pt")))
        rng = torch.load(os.path.join(ck, "rng_state.pt"))
        gen.set_state(rng["generator"])
        torch.set_rng_state(rng["cpu"])
        with open(os.path.join(ck, "trainer_state.json")) as f:
            step = json.load(f)["global_step"]
        print(f"trainer: resumed from {ck} at step {step}", flush=True)
    else:
        print("trainer: fresh start", flush=True)

    stop = {"requested": False, "signal": False}

    def on_term(signum, frame):
        print("trainer: SIGTERM: saving after this step", flush=True)
        stop["signal"] = True
        # Several ranks stop where they all agree: at the next stop-flag all-reduce.
        stop["requested"] = stop["requested"] or world == 1

    signal.signal(signal.SIGTERM, on_term)

    def save_file():
        # Lightning's ModelCheckpoint: one file per checkpoint, written in place.
        os.makedirs(args.output_dir, exist_ok=True)
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "rng": {"generator": gen.get_state(), "cpu": torch.get_rng_state()},
            "global_step": step,
        }
        torch.save(state, os.path.join(args.output_dir, f"epoch=0-step={step}.ckpt"))

    def save(dirname, with_state=True):
        if rank != 0:
            return  # one writer: rank 0
        if args.checkpoint_format == "file" and with_state:
            return save_file()
        os.makedirs(dirname, exist_ok=True)
        save_safetensors(os.path.join(dirname, "model.safetensors"), model.state_dict())
        if with_state:
            torch.save(opt.state_dict(), os.path.join(dirname, "optimizer.pt"))
            torch.save({"generator": gen.get_state(), "cpu": torch.get_rng_state()}, os.path.join(dirname, "rng_state.pt"))
        if fault == "link-in-save" and with_state:
            os.symlink("nowhere.bin", os.path.join(dirname, "gone.bin"))
        state = {"global_step": step, "max_steps": args.max_steps, "loss": last_loss}
        if stopped_early["yes"]:
            state["stateful_callbacks"] = {
                "TrainerControl": {"args": {"should_training_stop": True}, "attributes": {}},
                "EarlyStoppingCallback": {
                    "args": {"early_stopping_patience": 1, "early_stopping_threshold": 0.0},
                    "attributes": {"early_stopping_patience_counter": 1},
                },
            }
        with open(os.path.join(dirname, "trainer_state.json"), "w") as f:
            json.dump(state, f)
        if with_state:
            print(f"trainer: saved {dirname}", flush=True)
        if with_state and args.save_total_limit > 0:
            rotate()

    def rotate():
        names = [n for n in os.listdir(args.output_dir) if re.fullmatch(r"checkpoint-\d+", n)]
        steps = sorted(int(n.split("-")[1]) for n in names)
        for old in steps[: -args.save_total_limit]:
            shutil.rmtree(os.path.join(args.output_dir, f"checkpoint-{old}"))

    last_loss = None
    saved_at = step
    stopped_early = {"yes": False}
    # Test knob (environment, so it stays out of the run fingerprint): a slower model.
    delay_s = float(os.environ.get("SOUP_EXAMPLE_STEP_DELAY_MS", "0")) / 1000
    # SOUP_EXAMPLE_FAULT=stop-at:S: a scheduler (or a notebook's stop button) sends SIGTERM at step S.
    fault = os.environ.get("SOUP_EXAMPLE_FAULT", "")
    stop_at = int(fault.split(":")[1]) if fault.startswith("stop-at:") else -1
    exit_at = tuple(int(x) for x in fault.split(":")[1:]) if fault.startswith("exit:") else (-1, 0)
    early_at = int(fault.split(":")[1]) if fault.startswith("early-stop:") else -1
    m, t = args.per_device_train_batch_size, args.seq_len
    accum = max(1, args.gradient_accumulation_steps)
    cap = os.environ.get("SOUP_EXAMPLE_CAPACITY", "")
    cap_from, cap_m = (int(cap.split(":")[0]), int(cap.split(":")[1])) if ":" in cap else (0, int(cap) if cap else None)
    while step < args.max_steps:
        t0 = time.perf_counter()
        starts = torch.randint(0, len(data) - t - 1, (m * accum * world,), generator=gen)[rank * m * accum :][: m * accum]
        x = torch.stack([data[s : s + t] for s in starts])
        y = torch.stack([data[s + 1 : s + t + 1] for s in starts])
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        if cap_m is not None and step + 1 > cap_from and m > cap_m:
            torch.empty(2**44 * m, dtype=torch.uint8)  # the device's limit: a real allocation failure
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for i in range(accum):
            xi, yi = x[i * m : (i + 1) * m], y[i * m : (i + 1) * m]
            loss = F.cross_entropy(model(xi).reshape(-1, 256), yi.reshape(-1)) / (accum * world)
            loss.backward()
            total += float(loss)
        if world > 1:
            for p in model.parameters():
                dist.all_reduce(p.grad)  # summed across ranks before the step
            flags = torch.tensor([total, 1.0 if stop["signal"] else 0.0], dtype=torch.float64)
            dist.all_reduce(flags)  # the batch's loss, and whether any rank was asked to stop
            total, stop["requested"] = float(flags[0]), bool(flags[1] > 0)
        opt.step()
        step += 1
        last_loss = total
        print(f"step {step} loss {last_loss:.4f} ms {(time.perf_counter() - t0) * 1000:.2f}", flush=True)
        if step == exit_at[0]:
            print(f"ValueError: simulated exit at step {step}", file=sys.stderr, flush=True)
            sys.exit(exit_at[1])
        if args.save_steps > 0 and step % args.save_steps == 0:
            save(os.path.join(args.output_dir, f"checkpoint-{step}"))
            saved_at = step
        if step == stop_at:
            os.kill(os.getpid(), signal.SIGTERM)
        if step == early_at:
            print(f"trainer: stopping early at step {step}", flush=True)
            stopped_early["yes"] = True
            break
        if stop["requested"]:
            break
        if delay_s > 0:
            time.sleep(delay_s)
    if saved_at != step or stopped_early["yes"]:
        save(os.path.join(args.output_dir, f"checkpoint-{step}"))
    if stop["requested"] and step < args.max_steps:
        print(f"trainer: stopped at step {step} (checkpoint saved)", flush=True)
        sys.exit(0)
    if args.checkpoint_format == "file":
        print(f"trainer: done at step {step}", flush=True)  # Lightning: the last .ckpt is the model
        return
    save(args.output_dir, with_state=False)  # trainer.save_model(output_dir)
    if world > 1:
        dist.destroy_process_group()
    print(f"trainer: done at step {step}", flush=True)


if __name__ == "__main__":
    main()
