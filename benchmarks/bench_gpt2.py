"""Training throughput and model-FLOPs utilisation of the lowrank GPT-2 125M (paper configuration).

    python benchmarks/bench_gpt2.py [--micro 32] [--accum 4] [--warmup 3] [--steps 8] \
        [--ctx 1024] [--no-compile] [--attn sdpa] [--json] [--profile-out FILE.json] [--cpu-smoke]

Runs the engine's own loop (``attnbias.train.fit`` with the online token-window source, AdamW with
the λ_SA/λ_MLP parameter groups, warm-up + cosine schedule, clipping, gradient accumulation, bf16
autocast, the model's unpadded SDPA attention, ``torch.compile`` of model and loss, fused AdamW on
GPU) on random tokens.  Timing as in a minimal reference loop: ``--warmup`` optimiser steps
(compilation included), then ``--steps`` steps each ended by a device synchronisation (taken in the
engine's ``after_backward`` hook, once per step), and the median step.  Tokens/s and MFU =
(6·N + 12·L·T·d) · tokens/s / peak bf16 FLOP/s (PaLM convention; N counts the matrices, the tied
embedding once: ``attnbias.models.gpt2.flops_per_token``; the peaks:
:func:`attnbias.models.flops.peak_bf16`); peak memory = ``max_memory_allocated`` over the timed
steps.  ``--profile-out`` profiles one more step with torch.profiler and writes where its kernel
time goes (:func:`mfu_levers.profile_table`).  ``--json`` prints one JSON line at the end.  Without
a GPU (or with ``--cpu-smoke``) it times a tiny model on the CPU (compiled with ``--cpu-compile``);
MFU is not meaningful there.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from attnbias.models.flops import peak_bf16
from attnbias.workflow import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))


def peak_flops(device: torch.device) -> float | None:
    return peak_bf16(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    import transformers

    from attnbias.data.text_lm import WindowSampler
    from attnbias.models.gpt2 import build_gpt2, flops_per_token, gpt2_param_groups, lm_loss
    from attnbias.train import TrainConfig, fit, resolve_device

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=None, help="timed optimiser steps")
    ap.add_argument("--warmup", type=int, default=None, help="optimiser steps before timing")
    ap.add_argument("--micro", type=int, default=None, help="sequences per micro-batch")
    ap.add_argument("--accum", type=int, default=None, help="micro-batches per step")
    ap.add_argument("--ctx", type=int, default=None)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--attn", default=None, help="attention implementation (default: the model's)")
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end")
    ap.add_argument("--profile-out", default=None, help="profile one more step, write JSON here")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny model on the CPU")
    ap.add_argument("--cpu-compile", action="store_true", help="compile on the CPU too (smoke)")
    args = ap.parse_args()
    s = load_config(".", scale="paper", validate=None)["lowrank"]["lm"]
    device = torch.device("cpu") if args.cpu_smoke else resolve_device("auto")
    gpu = device.type == "cuda"
    dims = dict(n_embd=s["n_embd"], n_layer=s["n_layer"], n_head=s["n_head"])
    if not gpu:
        dims = dict(n_embd=64, n_layer=2, n_head=2)
    ctx = args.ctx or (s["ctx"] if gpu else 64)
    micro = args.micro or (32 if gpu else 2)
    accum = args.accum or (4 if gpu else 2)
    steps = args.steps or (8 if gpu else 2)
    warm = args.warmup or (3 if gpu else 1)
    compile_ = (gpu or args.cpu_compile) and not args.no_compile
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    vocab = 50257
    dims.update({"attn": args.attn} if args.attn else {})
    model = build_gpt2(vocab, ctx, eos_id=vocab - 1, pad_vocab_to=s["pad_vocab_to"], **dims)
    tokens = np.random.default_rng(0).integers(
        0, vocab, size=max(4 * micro * accum * ctx, 2_000_000), dtype=np.uint16
    )
    sampler = WindowSampler(tokens, ctx, micro * accum, seed=0)
    total_steps = warm + steps + (1 if args.profile_out else 0)
    cfg = TrainConfig(
        epochs=1,
        batch_size=micro * accum,
        lr=s["lr"],
        optimizer="adamw",
        steps_per_epoch=total_steps,
        compile=compile_,
        schedule="cosine",
        warmup_steps=1,
        final_lr_frac=s["final_lr_frac"],
        grad_clip=s["grad_clip"],
        grad_accum=accum,
        extra={"betas": tuple(s["betas"]), "eps": s["eps"], **({"fused": True} if gpu else {})},
    )
    from mfu_levers import StepMarks

    mark = StepMarks(gpu, warm, steps, profile=bool(args.profile_out))

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
        after_backward=mark,
    )
    if gpu:
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    timed = mark.marks[warm - 1 : warm + steps]
    intervals = [b - a for a, b in zip(timed[:-1], timed[1:], strict=True)]
    step_s = statistics.median(intervals)
    tps = micro * accum * ctx / step_s
    fpt = flops_per_token(model, ctx)
    n_matrix = (fpt - 12.0 * model.config.n_layer * ctx * model.config.n_embd) / 6.0
    peak = peak_flops(device)
    name = torch.cuda.get_device_name(device) if gpu else f"CPU ({torch.get_num_threads()} threads)"
    out = {
        "bench": "attnbias bench_gpt2 (engine fit, HF GPT2LMHeadModel)",
        "compile": compile_,
        "micro": micro,
        "accum": accum,
        "ctx": ctx,
        "step_s": step_s,
        "step_s_mean": statistics.fmean(intervals),
        "tokens_per_s": tps,
        "tflops": fpt * tps / 1e12,
        "mfu": fpt * tps / peak if peak else None,
        "warmup_s": mark.marks[warm - 1] - t0,
        "peak_mem_mb": torch.cuda.max_memory_allocated() / 2**20 if gpu else None,
        "loss": hist[-1]["train_loss"],
        "params_m": n_matrix / 1e6,
        "vocab_rows": model.config.vocab_size,
        "attn": model.config._attn_implementation,
        "device": name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "wall_s": wall,
        "cpu_s": cpu,
    }
    if mark.prof is not None:
        from mfu_levers import profile_table

        c = model.config
        roles = {"d": c.n_embd, "mlp": 4 * c.n_embd, "vocab": c.vocab_size}
        table = profile_table(mark.prof, roles, step_ms=step_s * 1e3)  # the median step
        table.update(model="gpt2", micro=micro, accum=accum, compile=compile_)
        Path(args.profile_out).write_text(json.dumps(table, indent=1))
        out["profile_out"] = args.profile_out
    print(
        f"device: {name}   model: GPT-2 {dims['n_layer']}L x {dims['n_head']}H, "
        f"d={dims['n_embd']}, {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters"
        f"   context {ctx}   batch {micro} x {accum} = {micro * accum * ctx:,} tokens/step   "
        f"compile {compile_}   attention {out['attn']}"
    )
    print(
        f"throughput: {tps:,.0f} tokens/s   ({fpt / 1e9:.2f} GFLOP per token, "
        f"{fpt * tps / 1e12:.2f} TFLOP/s)   median {step_s:.3f} s/step over {steps} steps   "
        f"final loss {hist[-1]['train_loss']:.3f}"
    )
    if peak:
        run_tokens = s["steps"] * s["batch_size"] * s["ctx"]
        print(
            f"MFU: {100 * out['mfu']:.1f} % of {peak / 1e12:.0f} TFLOP/s bf16 (goal >= 40 %)   "
            f"-> one paper-preset run ({run_tokens / 1e9:.2f} B tokens): "
            f"{run_tokens / tps / 3600:.2f} h"
        )
        print(f"peak GPU memory (timed steps): {out['peak_mem_mb'] / 1024:.1f} GiB allocated")
    print(f"total incl. warm-up: {wall:.1f} s wall, {cpu:.1f} s CPU (CPU/wall = {cpu / wall:.2f})")
    if args.json:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
