"""Training throughput and model-FLOPs utilisation of the lowrank GPT-2 125M (paper configuration).

    python benchmarks/bench_gpt2.py [--steps 10] [--micro 32] [--accum 4] [--ctx 1024] \
        [--no-compile]

Runs the engine's own loop (``attnbias.train.fit`` with the online token-window source, AdamW with
the λ_SA/λ_MLP parameter groups, warm-up + cosine schedule, clipping, gradient accumulation, bf16
autocast, SDPA attention, ``torch.compile`` and fused AdamW on GPU) on random tokens, for two
"epochs" of ``--steps`` optimiser steps, and reports the second (after compilation): tokens/s and
MFU = (6·N + 12·L·T·d) · tokens/s / peak bf16 FLOP/s (PaLM convention; N counts the matrices,
the tied embedding once).  Goal on one H100: MFU ≥ 40 %.  Without a GPU it times a few steps of the
same model on the CPU (a smaller batch and context) and prints wall and CPU time; MFU is not
meaningful there.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import torch

from attnbias.workflow import load_config

PEAK_BF16 = {
    "H100 80GB HBM3": 989e12,
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "H200": 989e12,
    "A100": 312e12,
}


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    from attnbias.data.text_lm import WindowSampler
    from attnbias.models.gpt2 import build_gpt2, flops_per_token, gpt2_param_groups, lm_loss
    from attnbias.train import TrainConfig, fit, resolve_device

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=None, help="optimiser steps per timed epoch")
    ap.add_argument("--micro", type=int, default=None, help="sequences per micro-batch")
    ap.add_argument("--accum", type=int, default=None, help="micro-batches per step")
    ap.add_argument("--ctx", type=int, default=None)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    s = load_config(".", scale="paper")["lowrank"]["lm"]
    device = resolve_device("auto")
    gpu = device.type == "cuda"
    ctx = args.ctx or (s["ctx"] if gpu else 256)
    micro = args.micro or (32 if gpu else 2)
    accum = args.accum or (4 if gpu else 1)
    steps = args.steps or (10 if gpu else 3)
    compile_ = gpu and not args.no_compile
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    vocab = 50257
    model = build_gpt2(
        vocab,
        ctx,
        s["n_embd"],
        s["n_layer"],
        s["n_head"],
        eos_id=vocab - 1,
        pad_vocab_to=s["pad_vocab_to"],
    )
    tokens = np.random.default_rng(0).integers(
        0, vocab, size=max(4 * micro * accum * ctx, 2_000_000), dtype=np.uint16
    )
    sampler = WindowSampler(tokens, ctx, micro * accum, seed=0)
    cfg = TrainConfig(
        epochs=2,
        batch_size=micro * accum,
        lr=s["lr"],
        optimizer="adamw",
        steps_per_epoch=steps,
        compile=compile_,
        schedule="cosine",
        warmup_steps=1,
        final_lr_frac=s["final_lr_frac"],
        grad_clip=s["grad_clip"],
        grad_accum=accum,
        extra={"betas": tuple(s["betas"]), "eps": s["eps"], **({"fused": True} if gpu else {})},
    )
    t0, c0 = time.perf_counter(), cpu_seconds()
    hist = fit(
        model,
        None,
        lm_loss,
        cfg,
        device,
        param_groups=gpt2_param_groups(model, 0.1, 0.1),
        image_key=None,
        progress=False,
        batch_fn=sampler,
    )
    if gpu:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    sec = hist[-1]["epoch_seconds"]  # epoch 2: after warm-up and compilation
    tps = steps * micro * accum * ctx / sec
    fpt = flops_per_token(model, ctx)
    n_params = sum(p.numel() for p in model.parameters())
    name = torch.cuda.get_device_name(device) if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(
        f"device: {name}   model: GPT-2 {s['n_layer']}L x {s['n_head']}H, d={s['n_embd']}, "
        f"{n_params / 1e6:.1f} M parameters   "
        f"context {ctx}   batch {micro} x {accum} = {micro * accum * ctx:,} tokens/step   "
        f"compile {compile_}"
    )
    print(
        f"throughput: {tps:,.0f} tokens/s   ({fpt / 1e9:.2f} GFLOP per token, "
        f"{fpt * tps / 1e12:.2f} TFLOP/s)   "
        f"{sec / steps:.3f} s/step   final loss {hist[-1]['train_loss']:.3f}"
    )
    peak = peak_flops(device)
    if peak:
        mfu = fpt * tps / peak
        run_tokens = s["steps"] * s["batch_size"] * s["ctx"]
        print(
            f"MFU: {100 * mfu:.1f} % of {peak / 1e12:.0f} TFLOP/s bf16 (goal >= 40 %)   "
            f"-> one paper-preset run "
            f"({run_tokens / 1e9:.2f} B tokens): {run_tokens / tps / 3600:.2f} h"
        )
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    print(f"total incl. warm-up: {wall:.1f} s wall, {cpu:.1f} s CPU (CPU/wall = {cpu / wall:.2f})")


if __name__ == "__main__":
    main()
