"""The throughput parts: training throughput and model-FLOPs utilisation of the three transformers
the paper preset trains on GPUs (the maxmargin ViT-B/2, the lowrank GPT-2 124M, BERT-base
fine-tuning), each through the engine's own training step (:func:`attnbias.train.fit`) at the
paper preset's settings, on random data.  FLOP counts: :mod:`attnbias.models.flops`."""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path

from attnbias.gpu_check.device import peak_flops, sync
from attnbias.gpu_check.preset import paper_settings
from attnbias.models.flops import TRAIN_PER_FORWARD


def timed_fit(model, data, loss_fn, cfg, device, **kw) -> dict:
    """Train with :func:`attnbias.train.fit` for ``cfg.epochs`` epochs of ``cfg.steps_per_epoch``
    steps; the median of the epochs after the first is the steady step time."""
    from attnbias.train import fit

    t0 = time.perf_counter()
    hist = fit(model, data, loss_fn, cfg, device, progress=False, **kw)
    sync(device)
    secs = [h["seconds"] for h in hist if "seconds" in h]
    step = statistics.median(secs[1:]) / cfg.steps_per_epoch
    loss = float(hist[-1]["train_loss"])
    return {
        "steady_step_s": step,
        "warmup_epoch_s": secs[0],
        "timed_epochs_s": secs[1:],
        "steps_per_epoch": cfg.steps_per_epoch,
        "final_train_loss": loss,
        "fit_wall_s": time.perf_counter() - t0,
        **({"_failure": f"training loss is {loss}"} if not math.isfinite(loss) else {}),
    }


def _with_mfu(out: dict, device, flops_per_item: float, items_per_step: float, unit: str) -> dict:
    ips = items_per_step / out["steady_step_s"]
    out.update(
        throughput=ips,
        unit=unit,
        flops_per_item=flops_per_item,
        achieved_tflops=flops_per_item * ips / 1e12,
    )
    if device.type == "cuda":
        peak = peak_flops(device)
        out["peak_tflops"] = peak / 1e12 if peak else float("nan")
        out["mfu"] = flops_per_item * ips / peak if peak else float("nan")
    return out


def bench_vit(cpu: bool, device, workdir: Path, compile_: bool) -> dict:
    """maxmargin ViT-B/2 (paper preset: 32×32 CIFAR, patch 2, 257 tokens), SGD + momentum,
    GPU-side crop/flip, data resident on the device, bf16 autocast."""
    import torch

    from attnbias.models.flops import vit_forward_flops
    from attnbias.models.vit import build_vit
    from attnbias.train import TrainConfig

    s = dict(paper_settings()["maxmargin"]["vit"])
    if cpu:
        s.update(hidden=32, layers=2, heads=2, mlp=64, patch_size=8, batch_size=8)
    steps = 2 if cpu else 25
    if not cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        s["batch_size"] = int(os.environ.get("GPU_CHECK_VIT_BATCH", s["batch_size"]))  # a lever
    model = build_vit(
        s["image_size"], s["patch_size"], 3, s["hidden"], s["layers"], s["heads"], s["mlp"], 10
    )
    n = s["batch_size"] * steps
    g = torch.Generator().manual_seed(0)
    data = {
        "x": torch.randn(n, 3, s["image_size"], s["image_size"], generator=g),
        "y": torch.randint(0, 10, (n,), generator=g),
    }

    def loss_fn(m, b):
        return torch.nn.functional.cross_entropy(m(b["x"]).float(), b["y"]), {}

    cfg = TrainConfig(
        epochs=3,
        batch_size=s["batch_size"],
        lr=s["lr"],
        optimizer=s["optimizer"],
        momentum=s["momentum"],
        steps_per_epoch=steps,
        augment_pad=s["augment_pad"],
        augment_flip=s["augment_flip"],
        compile=compile_,
    )
    out = timed_fit(model, data, loss_fn, cfg, device)
    flops = TRAIN_PER_FORWARD * vit_forward_flops(
        s["image_size"], s["patch_size"], 3, s["hidden"], s["layers"], s["mlp"], 10
    )
    out = _with_mfu(out, device, flops, s["batch_size"], "images/s")
    out.update(
        batch=s["batch_size"], compile=int(compile_), tokens=(32 // s["patch_size"]) ** 2 + 1
    )
    epochs, per_epoch = s["epochs"], 50_000 // s["batch_size"]
    out["projected_paper_train_h"] = epochs * per_epoch * out["steady_step_s"] / 3600
    return out


def bench_gpt2(cpu: bool, device, workdir: Path) -> dict:
    """lowrank GPT-2 124M (ctx 1024, vocabulary padded to 50,304): AdamW (fused on GPU) with the
    λ_SA/λ_MLP groups, warm-up + cosine, clipping, gradient accumulation, bf16, compile."""
    import numpy as np
    import torch

    from attnbias.data.text_lm import WindowSampler
    from attnbias.models.gpt2 import build_gpt2, flops_per_token, gpt2_param_groups, lm_loss
    from attnbias.train import TrainConfig

    s = dict(paper_settings()["lowrank"]["lm"])
    micro, accum = s["batch_size"] // s["grad_accum"], 4
    if cpu:
        s.update(n_embd=32, n_layer=2, n_head=2, ctx=64)
        micro, accum = 2, 2
    steps = 2 if cpu else 6
    if not cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        micro = int(os.environ.get("GPU_CHECK_GPT2_MICRO", micro))  # a lever
        accum = max(1, 128 // micro)
    vocab = 512 if cpu else 50257
    model = build_gpt2(
        vocab,
        s["ctx"],
        s["n_embd"],
        s["n_layer"],
        s["n_head"],
        eos_id=vocab - 1,
        pad_vocab_to=s["pad_vocab_to"],
    )
    tokens = np.random.default_rng(0).integers(
        0, vocab, size=4 * steps * micro * accum * s["ctx"], dtype=np.uint16
    )
    sampler = WindowSampler(tokens, s["ctx"], micro * accum, seed=0)
    cfg = TrainConfig(
        epochs=3,
        batch_size=micro * accum,
        lr=s["lr"],
        optimizer="adamw",
        steps_per_epoch=steps,
        compile=bool(s["compile"]),
        schedule="cosine",
        warmup_steps=1,
        final_lr_frac=s["final_lr_frac"],
        grad_clip=s["grad_clip"],
        grad_accum=accum,
        extra={"betas": tuple(s["betas"]), "eps": s["eps"], **({"fused": True} if not cpu else {})},
    )
    out = timed_fit(
        model,
        None,
        lm_loss,
        cfg,
        device,
        batch_fn=sampler,
        image_key=None,
        param_groups=gpt2_param_groups(model, 0.1, 0.1),
    )
    fpt = flops_per_token(model, s["ctx"])
    out = _with_mfu(out, device, fpt, micro * accum * s["ctx"], "tokens/s")
    out.update(
        micro_batch=micro,
        grad_accum=accum,
        ctx=s["ctx"],
        compile=int(bool(s["compile"])),
        parameters_m=sum(p.numel() for p in model.parameters()) / 1e6,
    )
    run_tokens = s["steps"] * s["batch_size"] * s["ctx"]
    out["projected_paper_run_h"] = run_tokens / out["throughput"] / 3600
    return out


def bench_bert(cpu: bool, device, workdir: Path) -> dict:
    """fastrates BERT-base fine-tuning at the MNLI shape (batch 32 × 128 tokens, full length),
    SGD, bf16 autocast, data on the device."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from attnbias.models.flops import bert_forward_flops_per_token
    from attnbias.models.sequence import forward_logits
    from attnbias.train import TrainConfig

    s = paper_settings()["fastrates"]["fig1"]
    batch, length = s["batch_size"], s["max_length"]
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    cfg_model = BertConfig(num_labels=3, **(small if cpu else {}))
    if cpu:
        batch, length = 4, 32
    steps = 2 if cpu else 40
    if not cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg_model)
    model.set_attn_implementation("sdpa")
    n = batch * steps
    g = torch.Generator().manual_seed(0)
    data = {
        "input_ids": torch.randint(
            1000, cfg_model.vocab_size, (n, length), generator=g, dtype=torch.int32
        ),
        "attention_mask": torch.ones(n, length, dtype=torch.int8),
        "token_type_ids": torch.zeros(n, length, dtype=torch.int8),
        "y": torch.randint(0, 3, (n,), generator=g),
    }

    def loss_fn(m, b):
        return torch.nn.functional.cross_entropy(forward_logits(m, b).float(), b["y"]), {}

    lr = s["optimizers"]["sgd"]["grid"][0]
    cfg = TrainConfig(epochs=3, batch_size=batch, lr=lr, optimizer="sgd", steps_per_epoch=steps)
    out = timed_fit(model, data, loss_fn, cfg, device, image_key=None)
    h, layers, mlp = cfg_model.hidden_size, cfg_model.num_hidden_layers, cfg_model.intermediate_size
    flops_seq = TRAIN_PER_FORWARD * bert_forward_flops_per_token(h, layers, mlp, length) * length
    out = _with_mfu(out, device, flops_seq, batch, "sequences/s")
    out.update(tokens_per_s=out["throughput"] * length, batch=batch, length=length)
    out["projected_paper_run_h"] = s["steps"] * out["steady_step_s"] / 3600
    return out
