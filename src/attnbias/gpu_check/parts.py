"""The parts of the GPU check (:data:`PARTS`) and how one runs (:func:`run_part`).

Every part is a function ``(cpu, device, workdir) -> metrics``, run in its own child process by
the command (:mod:`attnbias.gpu_check.cli`) through :func:`run_part`, which adds the part's wall
time and peak memory.  A part that returns a ``_failure`` entry is recorded as failed with that
reason, its metrics kept.  ``kind`` says which metrics a passed part must report
(:func:`attnbias.gpu_check.report.required_metrics`); ``limit`` is its time limit in seconds.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

from attnbias.gpu_check import families
from attnbias.gpu_check.cuda_tests import part_pytest
from attnbias.gpu_check.device import memory, part_device, sync
from attnbias.gpu_check.preset import paper_settings
from attnbias.gpu_check.throughput import bench_bert, bench_gpt2, bench_vit


def cvxopt_stub() -> None:
    """``attnbias.experiments.maxmargin`` imports the SVM solvers, which need cvxopt; the GPU
    families never solve an SVM, so where cvxopt is not installed an empty stand-in module lets
    the package import (a solver call would fail on it)."""
    import types

    try:
        import cvxopt  # noqa: F401
    except ImportError:
        stub = types.ModuleType("cvxopt")
        stub.solvers = types.ModuleType("cvxopt.solvers")
        sys.modules.setdefault("cvxopt", stub)
        sys.modules.setdefault("cvxopt.solvers", stub.solvers)


def preload() -> None:
    """Import what the parts use, once, before they are forked (no CUDA is touched)."""
    import timm.models.vision_transformer
    import transformers

    cvxopt_stub()
    import attnbias.experiments.fastrates.finetune
    import attnbias.experiments.fastrates.image
    import attnbias.experiments.lowrank
    import attnbias.experiments.maxmargin
    import attnbias.train  # noqa: F401

    for name in ("GPT2LMHeadModel", "BertForSequenceClassification"):
        getattr(transformers, name)
    timm.models.vision_transformer.VisionTransformer  # noqa: B018


def run_part(name: str, cpu: bool, workdir: Path) -> dict:
    """Run part ``name`` (in the current process) and return its metrics."""
    import torch

    if cpu:
        device = torch.device("cpu")
        # tiny mode: torch.compile traces with Dynamo but generates no code (no C++ toolchain,
        # seconds instead of minutes); the engine's compile path is still exercised
        torch.compile = functools.partial(torch.compile, backend="eager")
    else:
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device is visible (run with --cpu for the tiny CPU mode)")
        device = torch.device("cuda")
        torch.cuda.reset_peak_memory_stats(device)
    fn = PARTS[name]["fn"]
    t0 = time.perf_counter()
    metrics = fn(cpu, device, workdir)
    sync(device)
    metrics["part_wall_s"] = round(time.perf_counter() - t0, 1)
    if device.type == "cuda":
        metrics["device_name"] = torch.cuda.get_device_name(device)
    metrics.update(memory(device))
    return metrics


def _family(name):
    def fn(cpu, device, workdir):
        return getattr(families, name)(cpu, device, workdir, paper_settings())

    return fn


PARTS = {
    "device_ceilings": dict(
        kind="device",
        limit=30,
        fn=part_device,
        what="bf16 matrix product (8192³) and device copy: measured ceilings",
    ),
    "pytest_gpu": dict(
        kind="tests", limit=100, fn=part_pytest, what="pytest -m gpu (the CUDA tests)"
    ),
    "bench_vit_b2": dict(
        kind="benchmark",
        limit=50,
        fn=functools.partial(bench_vit, compile_=False),
        what="maxmargin ViT-B/2 (257 tokens) training, bf16, eager",
    ),
    "bench_vit_b2_compile": dict(
        kind="benchmark",
        limit=100,
        fn=functools.partial(bench_vit, compile_=True),
        what="maxmargin ViT-B/2 training, bf16, torch.compile",
    ),
    "bench_gpt2": dict(
        kind="benchmark",
        limit=110,
        fn=bench_gpt2,
        what="lowrank GPT-2 124M, ctx 1024, bf16, compile, fused AdamW",
    ),
    "bench_bert": dict(
        kind="benchmark",
        limit=50,
        fn=bench_bert,
        what="fastrates BERT-base fine-tuning, 32 × 128 tokens, bf16",
    ),
    "family_maxmargin_vit": dict(
        kind="family",
        limit=100,
        fn=_family("maxmargin_vit"),
        what="maxmargin Figs 6-7: train_vit, paper settings, 2 epochs",
    ),
    "family_fastrates_bert": dict(
        kind="family",
        limit=70,
        fn=_family("fastrates_bert"),
        what="fastrates Figs 1/4: train_text, 4 optimisers + Fig 4",
    ),
    "family_fastrates_vit": dict(
        kind="family",
        limit=80,
        fn=_family("fastrates_vit"),
        what="fastrates Fig 7: train_image (ViT-small, SNGD), 2 epochs",
    ),
    "family_lowrank_lm": dict(
        kind="family",
        limit=100,
        fn=_family("lowrank_lm"),
        what="lowrank Fig 3/C/Table 1: train_lm (GPT-2 124M), 4 steps",
    ),
    "family_lowrank_vit": dict(
        kind="family",
        limit=70,
        fn=_family("lowrank_vit"),
        what="lowrank Fig 3 right: train_vit_wd (ViT-S/16, 224²), 6 steps",
    ),
    "family_lowrank_recall": dict(
        kind="family",
        limit=40,
        fn=_family("lowrank_recall"),
        what="lowrank Fig 2: train_recall, paper size, 200 steps",
    ),
}
