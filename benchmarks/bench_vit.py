"""Training throughput and model-FLOPs utilisation of the maxmargin ViT (paper configuration).

    python benchmarks/bench_vit.py [--steps 30] [--warmup 5] [--batch 128] [--compile] \
        [--preset paper|quick] [--json] [--profile-out FILE.json] [--cpu-smoke] [--cpu-compile]

Runs the engine's own training step (``attnbias.train.fit``: bf16 autocast on GPU, SDPA attention,
data resident on the device, GPU-side crop/flip, SGD with momentum; ``--compile`` compiles model and
loss) on random CIFAR-shaped data, and prints images/s and MFU.  Timing: ``--warmup`` steps
(compilation included), then ``--steps`` steps each ended by a device synchronisation (in the
engine's ``after_backward`` hook) and their median.  Model FLOPs count the matmuls of the forward
pass (patch embedding, QKV/O projections, attention scores and values, MLP, head) ×3 for
forward+backward.  ``--profile-out`` profiles one more step and writes where its kernel time goes
(attention, matmuls split into attention projections / MLP / classifier by shape, LayerNorm, GELU,
optimiser, …; :func:`mfu_levers.profile_table`).  The FLOP count is
:func:`attnbias.models.flops.vit_forward_flops`.  On a CPU-only machine (or ``--cpu-smoke``) it
times a few steps of a small ViT (MFU is not meaningful there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from attnbias.models.flops import TRAIN_PER_FORWARD, peak_bf16, vit_forward_flops
from attnbias.workflow import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))


def peak_flops(device: torch.device) -> float | None:
    return peak_bf16(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def main():
    import timm

    from attnbias.models.vit import build_vit
    from attnbias.train import TrainConfig, fit, resolve_device

    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="paper", choices=["paper", "quick"])
    ap.add_argument("--steps", type=int, default=None, help="timed steps")
    ap.add_argument("--warmup", type=int, default=None, help="steps before timing")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end")
    ap.add_argument("--profile-out", default=None, help="profile one more step, write JSON here")
    ap.add_argument("--cpu-smoke", action="store_true", help="a small ViT on the CPU")
    ap.add_argument("--cpu-compile", action="store_true", help="let --compile run on the CPU")
    args = ap.parse_args()
    s = dict(load_config(".", scale=args.preset, validate=None)["maxmargin"]["vit"])
    device = torch.device("cpu") if args.cpu_smoke else resolve_device("auto")
    gpu = device.type == "cuda"
    if not gpu and args.preset == "paper":
        s.update(hidden=64, layers=2, heads=2, mlp=128, patch_size=8)
    steps = args.steps or (30 if gpu else 2)
    warm = args.warmup or (5 if gpu else 1)
    batch = args.batch or (s["batch_size"] if gpu else 8)
    compile_ = args.compile and (gpu or args.cpu_compile)
    channels = 3 if s["dataset"] == "cifar10" else 1
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    model = build_vit(
        s["image_size"],
        s["patch_size"],
        channels,
        s["hidden"],
        s["layers"],
        s["heads"],
        s["mlp"],
        10,
    )
    total_steps = warm + steps + (1 if args.profile_out else 0)
    n_data = min(batch * total_steps, 50_000)
    x = torch.randn(n_data, channels, s["image_size"], s["image_size"])
    y = torch.randint(0, 10, (len(x),))

    def loss_fn(m, b):
        return torch.nn.functional.cross_entropy(m(b["x"]).float(), b["y"]), {}

    cfg = TrainConfig(
        epochs=1,
        batch_size=batch,
        lr=s["lr"],
        optimizer=s["optimizer"],
        momentum=s["momentum"],
        steps_per_epoch=total_steps,
        augment_pad=s["augment_pad"],
        augment_flip=s["augment_flip"],
        compile=compile_,
    )
    from mfu_levers import StepMarks

    mark = StepMarks(gpu, warm, steps, profile=bool(args.profile_out))

    t0 = time.perf_counter()
    hist = fit(model, {"x": x, "y": y}, loss_fn, cfg, device, progress=False, after_backward=mark)
    if gpu:
        torch.cuda.synchronize()
    timed = mark.marks[warm - 1 : warm + steps]
    intervals = [b - a for a, b in zip(timed[:-1], timed[1:], strict=True)]
    step_s = statistics.median(intervals)
    ips = batch / step_s
    flops = TRAIN_PER_FORWARD * vit_forward_flops(
        s["image_size"], s["patch_size"], channels, s["hidden"], s["layers"], s["mlp"], 10
    )
    peak = peak_flops(device)
    name = torch.cuda.get_device_name(device) if gpu else f"CPU ({torch.get_num_threads()} threads)"
    tokens = (s["image_size"] // s["patch_size"]) ** 2 + 1
    out = {
        "bench": "attnbias bench_vit (engine fit, timm VisionTransformer)",
        "preset": args.preset,
        "compile": compile_,
        "batch": batch,
        "tokens": tokens,
        "step_s": step_s,
        "step_s_mean": statistics.fmean(intervals),
        "images_per_s": ips,
        "tflops": flops * ips / 1e12,
        "mfu": flops * ips / peak if peak else None,
        "warmup_s": mark.marks[warm - 1] - t0,
        "peak_mem_mb": torch.cuda.max_memory_allocated() / 2**20 if gpu else None,
        "loss": hist[-1]["train_loss"],
        "attn": "sdpa" if all(b.attn.fused_attn for b in model.blocks) else "eager",
        "timm": timm.__version__,
        "device": name,
        "torch": torch.__version__,
    }
    if mark.prof is not None:
        from mfu_levers import profile_table

        roles = {"d": s["hidden"], "mlp": s["mlp"], "classes": 10}
        table = profile_table(mark.prof, roles, step_ms=step_s * 1e3)  # the median step
        table.update(model="vit", batch=batch, tokens=tokens, compile=compile_)
        Path(args.profile_out).write_text(json.dumps(table, indent=1))
        out["profile_out"] = args.profile_out
    print(
        f"device: {name}   preset: {args.preset}   batch {batch}   {tokens} tokens   "
        f"compile {compile_}   median of {steps} steps"
    )
    print(
        f"throughput: {ips:.1f} images/s   ({flops / 1e9:.1f} GFLOP per training image, "
        f"{flops * ips / 1e12:.2f} TFLOP/s)"
    )
    if peak:
        epoch_h = 50_000 / ips / 3600
        print(
            f"MFU: {100 * out['mfu']:.1f} % of {peak / 1e12:.0f} TFLOP/s bf16   -> 400 epochs of "
            f"CIFAR-10: {400 * epoch_h:.2f} h"
        )
    print(f"(total wall incl. warm-up {time.perf_counter() - t0:.1f} s)")
    if args.json:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
