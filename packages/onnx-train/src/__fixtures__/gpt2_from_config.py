"""A plain PyTorch GPT-2, built from a Hugging Face `config.json` alone (no transformers, no soup code).

It reads the GPT2Config fields (vocab_size, n_positions, n_embd, n_layer, n_head, n_inner,
activation_function, layer_norm_epsilon, tie_word_embeddings) and loads `model.safetensors` by the
GPT-2 tensor names (Conv1D weights are [in, out]: y = x @ W + b), parsing safetensors by hand when
the `safetensors` module is absent.

  python3 gpt2_from_config.py loss <dir> <batch.json>              -> {"loss": ...}
  python3 gpt2_from_config.py step <dir> <batch.json> <opts.json>  -> writes opts["out"]: float64
      loss, grad_norm and the full gradient at the loaded parameters, then torch.optim.AdamW steps
      (clip_grad_norm_ first) on the same batch: parameters and moments after them.
"""
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}


def load_safetensors(path):
    try:
        from safetensors.torch import load_file  # noqa: PLC0415

        return load_file(path)
    except ImportError:
        pass
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, size = DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        buf = bytearray(data[base + start : base + end])
        t = torch.frombuffer(buf, dtype=dtype) if end > start else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def activation(name):
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu":
        return lambda x: F.gelu(x)
    if name == "relu":
        return F.relu
    raise SystemExit(f"unsupported activation_function {name!r}")


class GPT2:
    def __init__(self, cfg, tensors, dtype):
        assert cfg["model_type"] == "gpt2", cfg["model_type"]
        self.V, self.P, self.D = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"]
        self.L, self.H = cfg["n_layer"], cfg["n_head"]
        self.inner = cfg.get("n_inner") or 4 * self.D
        self.eps = cfg["layer_norm_epsilon"]
        self.act = activation(cfg["activation_function"])
        self.tied = cfg.get("tie_word_embeddings", True)
        self.scale = cfg.get("scale_attn_weights", True)
        D, F_, V = self.D, self.inner, self.V
        shapes = {"wte.weight": (V, D), "wpe.weight": (self.P, D), "ln_f.weight": (D,), "ln_f.bias": (D,)}
        for i in range(self.L):
            h = f"h.{i}"
            shapes.update({
                f"{h}.ln_1.weight": (D,), f"{h}.ln_1.bias": (D,),
                f"{h}.attn.c_attn.weight": (D, 3 * D), f"{h}.attn.c_attn.bias": (3 * D,),
                f"{h}.attn.c_proj.weight": (D, D), f"{h}.attn.c_proj.bias": (D,),
                f"{h}.ln_2.weight": (D,), f"{h}.ln_2.bias": (D,),
                f"{h}.mlp.c_fc.weight": (D, F_), f"{h}.mlp.c_fc.bias": (F_,),
                f"{h}.mlp.c_proj.weight": (F_, D), f"{h}.mlp.c_proj.bias": (D,),
            })
        if not self.tied:
            shapes["lm_head.weight"] = (V, D)
        missing = [k for k in shapes if k not in tensors]
        extra = [k for k in tensors if k not in shapes]
        if missing or extra:
            raise SystemExit(f"model.safetensors does not match config.json: missing {missing}, unexpected {extra}")
        self.params = {}
        for k, shape in shapes.items():
            t = tensors[k]
            if tuple(t.shape) != shape:
                raise SystemExit(f"{k}: shape {tuple(t.shape)}, config.json implies {shape}")
            self.params[k] = t.to(dtype).clone().requires_grad_(True)

    def loss(self, ids, labels):
        p = self.params
        B, T = ids.shape
        D, H = self.D, self.H
        dh = D // H
        x = p["wte.weight"][ids] + p["wpe.weight"][torch.arange(T)]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for i in range(self.L):
            h = f"h.{i}"
            a = F.layer_norm(x, (D,), p[f"{h}.ln_1.weight"], p[f"{h}.ln_1.bias"], self.eps)
            qkv = a @ p[f"{h}.attn.c_attn.weight"] + p[f"{h}.attn.c_attn.bias"]
            q, k, v = qkv.split(D, dim=2)
            q, k, v = (t.view(B, T, H, dh).transpose(1, 2) for t in (q, k, v))
            s = q @ k.transpose(-2, -1)
            if self.scale:
                s = s / math.sqrt(dh)
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            o = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
            x = x + o @ p[f"{h}.attn.c_proj.weight"] + p[f"{h}.attn.c_proj.bias"]
            m = F.layer_norm(x, (D,), p[f"{h}.ln_2.weight"], p[f"{h}.ln_2.bias"], self.eps)
            x = x + self.act(m @ p[f"{h}.mlp.c_fc.weight"] + p[f"{h}.mlp.c_fc.bias"]) @ p[f"{h}.mlp.c_proj.weight"] + p[f"{h}.mlp.c_proj.bias"]
        x = F.layer_norm(x, (D,), p["ln_f.weight"], p["ln_f.bias"], self.eps)
        logits = x @ (p["wte.weight"] if self.tied else p["lm_head.weight"]).t()
        return F.cross_entropy(logits.reshape(-1, self.V), labels.reshape(-1))


def flat(t):
    return t.detach().reshape(-1).tolist()


def main():
    mode, folder, batch_path = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(f"{folder}/config.json") as f:
        cfg = json.load(f)
    with open(batch_path) as f:
        batch = json.load(f)
    ids = torch.tensor(batch["input_ids"], dtype=torch.long)
    labels = torch.tensor(batch["labels"], dtype=torch.long)
    dtype = torch.float64 if mode == "step" else torch.float32
    torch.set_num_threads(1)
    model = GPT2(cfg, load_safetensors(f"{folder}/model.safetensors"), dtype)
    if mode == "loss":
        with torch.no_grad():
            print(json.dumps({"loss": model.loss(ids, labels).item()}))
        return
    with open(sys.argv[4]) as f:
        opts = json.load(f)
    names = list(model.params)
    loss = model.loss(ids, labels)
    grads = torch.autograd.grad(loss, [model.params[n] for n in names])
    grad_norm = torch.sqrt(sum((g * g).sum() for g in grads)).item()
    out = {"loss": loss.item(), "grad_norm": grad_norm, "grads": {n: flat(g) for n, g in zip(names, grads)}}
    decay = set(opts["decay"])
    groups = [
        {"params": [model.params[n] for n in names if n in decay], "weight_decay": opts["weight_decay"]},
        {"params": [model.params[n] for n in names if n not in decay], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=opts["lrs"][0], betas=(opts["beta1"], opts["beta2"]), eps=opts["eps"])
    losses = []
    for lr in opts["lrs"]:
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        step_loss = model.loss(ids, labels)
        step_loss.backward()
        losses.append(step_loss.item())
        if opts["max_grad_norm"] > 0:
            torch.nn.utils.clip_grad_norm_([model.params[n] for n in names], opts["max_grad_norm"])
        opt.step()
    out["step_losses"] = losses
    out["params"] = {n: flat(model.params[n]) for n in names}
    out["m"] = {n: flat(opt.state[model.params[n]]["exp_avg"]) for n in names}
    out["v"] = {n: flat(opt.state[model.params[n]]["exp_avg_sq"]) for n in names}
    with open(opts["out"], "w") as f:
        json.dump(out, f)
    print(json.dumps({"ok": True, "loss": out["loss"]}))


if __name__ == "__main__":
    main()
