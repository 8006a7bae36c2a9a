# The torch twin of proportional-trainer.cjs: the same switches, the memory held by a torch tensor.
import os, sys, time, signal
import torch
b = int(sys.argv[1])
env = os.environ
MiB = 1024 * 1024
if env.get("FLAKY"):
    try:
        n = int(open(env["FLAKY"]).read() or 0)
    except Exception:
        n = 0
    open(env["FLAKY"], "w").write(str(n + 1))
    if n % 2 == 0:
        os.kill(os.getpid(), signal.SIGKILL)
if env.get("KILL_AT") and b >= int(env["KILL_AT"]):
    os.kill(os.getpid(), signal.SIGKILL)
if env.get("EDGE") and b > int(env["EDGE"]):
    raise MemoryError(f"Unable to allocate {b} samples")
# QUAD_KIB: an attention-like term, b² × QUAD_KIB KiB, on top of the linear part.
# WORLD_SIZE: a data-parallel rank holds 1/N of the batch's memory.
want = b * int(env.get("MIB_PER_SAMPLE", "4")) * MiB + b * b * int(env.get("QUAD_KIB", "0")) * 1024
keep = torch.ones(want // int(env.get("WORLD_SIZE", "1")), dtype=torch.uint8)
if env.get("OOM_TEXT_AT") and b >= int(env["OOM_TEXT_AT"]):
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (skipping this batch)", flush=True)
time.sleep(int(env.get("HOLD_MS", "200")) / 1000)
sys.exit(0)
