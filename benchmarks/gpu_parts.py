"""The parts of ``benchmarks/gpu_check.py``: device ceilings, the CUDA tests, the throughput/MFU
benchmarks, and (in :mod:`gpu_families`) the short training loop of every GPU training family.

Every part is a function ``(cpu: bool, device, settings, workdir) -> metrics`` run in its own
child process by :func:`run_part`, which adds the part's peak memory.  A part that returns a
``_failure`` entry is recorded as failed with that reason and its metrics kept.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Dense bf16 tensor-core peak, FLOP/s, by (a substring of) the CUDA device name; the first match
# wins, so the specific names come first.  H100 SXM (HBM3): 989 TFLOP/s.
PEAK_BF16 = (
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),
    ("H200", 989e12),
    ("GH200", 989e12),
    ("A100", 312e12),
    ("L40S", 362e12),
)

FORMULAS = {
    "MFU": "model FLOPs per item × items/s ÷ the device's dense bf16 peak (H100 SXM: 989 TFLOP/s)",
    "ViT": (
        "per image, forward: 2·P·(p²·C)·d (patch embedding) + L·[2·n·d·4d (q, k, v, o) + "
        "2·2·n²·d (scores, values) + 2·2·n·d·m (MLP)] + 2·d·classes, n = P + 1 tokens; "
        "training = 3 × forward (benchmarks/bench_vit.py)"
    ),
    "GPT-2": (
        "per token: 6·N + 12·L·T·d (PaLM convention; N = the matrices, the tied embedding once; "
        "attention counted over the full context T; attnbias.models.gpt2.flops_per_token)"
    ),
    "BERT": (
        "per token, forward: L·[2·(4d² + 2·d·m) + 2·2·n·d], n = sequence length; training = 3 × "
        "forward (benchmarks/bench_bert.py; embeddings, pooler and head not counted)"
    ),
    "timing": (
        "fit() epochs of a fixed number of steps; epoch 1 is the warm-up (compilation, "
        "autotuning), the median of the later epochs is timed; fit() synchronises the device "
        "at every epoch end (it reads the loss)"
    ),
    "memory": (
        "torch.cuda.max_memory_reserved (the caching allocator's peak) + the CUDA context "
        "(device memory in use at the end minus the allocator's reserve); gpu_mem_mb_suggested "
        "rounds 1.25 × that up to 1 GB"
    ),
}


def peak_flops(name: str) -> float | None:
    return next((v for k, v in PEAK_BF16 if k in name), None)


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
    import transformers

    cvxopt_stub()
    import attnbias.experiments.fastrates.finetune
    import attnbias.experiments.fastrates.image
    import attnbias.experiments.lowrank
    import attnbias.experiments.maxmargin
    import attnbias.train  # noqa: F401

    for name in ("ViTForImageClassification", "GPT2LMHeadModel", "BertForSequenceClassification"):
        getattr(transformers, name)


def paper_settings() -> dict:
    """The paper preset's settings (``config.yaml`` + ``workflow/presets/paper.yaml``); validated
    when jsonschema is installed (it is not needed)."""
    from attnbias.workflow import load_config

    return load_config(ROOT, scale="paper", validate=None)


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def memory(device) -> dict:
    """Peak memory of this process: GPU (allocator peak + CUDA context) or host RSS."""
    import torch

    out = {"host_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if device.type != "cuda":
        out["peak_mem_mb"] = out["host_peak_rss_mb"]
        out["peak_mem_kind"] = "host peak RSS (CPU mode)"
        return out
    sync(device)
    free, total = torch.cuda.mem_get_info(device)
    used = (total - free) / 2**20
    reserved_now = torch.cuda.memory_reserved(device) / 2**20
    context = max(0.0, used - reserved_now)
    peak_reserved = torch.cuda.max_memory_reserved(device) / 2**20
    out.update(
        peak_allocated_mb=round(torch.cuda.max_memory_allocated(device) / 2**20),
        peak_reserved_mb=round(peak_reserved),
        context_mb=round(context),
        device_total_mb=round(total / 2**20),
        peak_mem_mb=round(peak_reserved + context),
        peak_mem_kind="max_memory_reserved + CUDA context",
    )
    out["gpu_mem_mb_suggested"] = int(1000 * math.ceil(1.25 * out["peak_mem_mb"] / 1000))
    return out


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


# ---------------------------------------------------------------------------------------------
# device ceilings and tests


def part_device(cpu: bool, device, workdir: Path) -> dict:
    """Measured ceilings: a bf16 matrix product (random data) and a device-to-device copy."""
    import torch

    n = 1024 if cpu else 8192
    dtype = torch.float32 if cpu else torch.bfloat16
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    sync(device)
    reps = 3 if cpu else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    mm = 2 * n**3 * reps / (time.perf_counter() - t0)
    x = torch.empty(256 * 2**20 // (4 if cpu else 1), dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    y.copy_(x)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        y.copy_(x)
    sync(device)
    bw = 2 * x.numel() * reps / (time.perf_counter() - t0)
    out = {"matmul_tflops": mm / 1e12, "matmul_size": n, "copy_gb_s": bw / 1e9}
    if not cpu:
        peak = peak_flops(torch.cuda.get_device_name(device))
        out["datasheet_peak_tflops"] = peak / 1e12 if peak else float("nan")
        out["matmul_fraction_of_peak"] = mm / peak if peak else float("nan")
    return out


def marks_gpu(source: str) -> bool:
    """Whether Python ``source`` applies the ``gpu`` mark in its code (``pytest.mark.gpu`` or
    ``mark.gpu``), not merely in a string or a comment."""
    if "mark.gpu" not in source:
        return False
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # pytest reports the error
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == "gpu"
        and (
            (isinstance(n.value, ast.Attribute) and n.value.attr == "mark")
            or (isinstance(n.value, ast.Name) and n.value.id == "mark")
        )
        for n in ast.walk(tree)
    )


def gpu_test_files() -> list[str]:
    """The test files that hold CUDA tests (``pytest.mark.gpu``)."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if marks_gpu(p.read_text(errors="replace"))
    )


def part_pytest(cpu: bool, device, workdir: Path) -> dict:
    """``pytest -m gpu`` over the files that hold CUDA tests; counts from its JUnit XML."""
    files = gpu_test_files()
    if not files:
        return {"_failure": "no test file marks a test with pytest.mark.gpu"}
    xml = workdir / "junit.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "gpu",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=-ra",
        f"--junitxml={xml}",
        *files,
    ]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(res.stdout[-20000:], res.stderr[-5000:], sep="\n")
    if not xml.exists():
        return {"_failure": f"pytest wrote no report (exit {res.returncode}): {res.stderr[-500:]}"}
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    bad = [
        f"{c.get('classname')}.{c.get('name')}"
        for c in suite.iter("testcase")
        if c.find("failure") is not None or c.find("error") is not None
    ]
    out = {
        "collected": counts["tests"],
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        "failed": counts["failures"],
        "errors": counts["errors"],
        "skipped": counts["skipped"],
        "failed_tests": bad,
        "files": files,
        "pytest_seconds": float(suite.get("time", "nan")),
    }
    if bad:
        out["_failure"] = f"{len(bad)} CUDA test(s) failed: {', '.join(bad)[:1500]}"
    elif not cpu and out["passed"] == 0:
        out["_failure"] = "no CUDA test ran on a CUDA machine"
    return out


# ---------------------------------------------------------------------------------------------
# throughput / MFU benchmarks (the engine's own training step)


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
    import torch

    ips = items_per_step / out["steady_step_s"]
    out.update(
        throughput=ips,
        unit=unit,
        flops_per_item=flops_per_item,
        achieved_tflops=flops_per_item * ips / 1e12,
    )
    if device.type == "cuda":
        peak = peak_flops(torch.cuda.get_device_name(device))
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
        return torch.nn.functional.cross_entropy(m(pixel_values=b["x"]).logits.float(), b["y"]), {}

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
    flops = 3 * vit_forward_flops(
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
    flops_seq = 3 * bert_forward_flops_per_token(h, layers, mlp, length) * length
    out = _with_mfu(out, device, flops_seq, batch, "sequences/s")
    out.update(tokens_per_s=out["throughput"] * length, batch=batch, length=length)
    out["projected_paper_run_h"] = s["steps"] * out["steady_step_s"] / 3600
    return out


def _families():
    import gpu_families

    return gpu_families


def _family(name):
    def fn(cpu, device, workdir):
        return getattr(_families(), name)(cpu, device, workdir, paper_settings())

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

_REQUIRED = {
    "device": ["matmul_tflops", "copy_gb_s"],
    "tests": ["collected", "passed", "failed", "errors", "skipped"],
    "benchmark": [
        "throughput",
        "steady_step_s",
        "achieved_tflops",
        "final_train_loss",
        "peak_mem_mb",
    ],
    "family": [
        "steady_step_s",
        "items_per_s",
        "final_train_loss",
        "projected_total_h",
        "peak_mem_mb",
    ],
}


def required_metrics(name: str, gpu: bool) -> list[str]:
    """The metrics part ``name`` must report as finite numbers when it passed."""
    kind = PARTS[name]["kind"]
    extra = {"benchmark": ["mfu"], "family": ["gpu_mem_mb_suggested"]}.get(kind, [])
    return _REQUIRED[kind] + (extra if gpu else [])


def _fmt(v, nd=1) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else str(v)
    if isinstance(v, int | float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:,.{nd}f}" if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def _summary(p: dict) -> str:
    m = p.get("metrics") or {}
    kind = p.get("kind")
    if kind == "device":
        mm, bw = _fmt(m.get("matmul_tflops")), _fmt(m.get("copy_gb_s"))
        return f"bf16 matmul {mm} TFLOP/s; copy {bw} GB/s"
    if kind == "tests":
        return (
            f"{m.get('passed')} passed, {m.get('failed')} failed, {m.get('errors')} errors, "
            f"{m.get('skipped')} skipped"
        )
    if kind == "benchmark":
        mfu = m.get("mfu")
        s = f"{_fmt(m.get('throughput'))} {m.get('unit')}, {_fmt(m.get('achieved_tflops'))} TFLOP/s"
        return s + (f", **MFU {100 * mfu:.1f} %**" if isinstance(mfu, float) else "")
    if kind == "family":
        return (
            f"{_fmt(m.get('items_per_s'))} {m.get('unit', 'items/s')}, step "
            f"{_fmt(1e3 * m.get('steady_step_s', float('nan')))} ms; paper run ≈ "
            f"{_fmt(m.get('projected_total_h'), 2)} h"
        )
    return ""


def markdown(report: dict) -> str:
    """The report as markdown: machine, one table row per part, details, formulas."""
    mach = report.get("machine", {})
    lines = [
        f"# {report.get('title')} — {report.get('date')}",
        "",
        f"Command: `{report.get('command')}`; mode **{mach.get('mode')}**; "
        f"total {report.get('total_s')} s of a {report.get('budget_s'):.0f} s budget.",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in mach.items() if k != "mode"),
        "",
        "| part | status | seconds (limit) | result | peak memory (MB) | suggested gpu_mem_mb |",
        "|---|---|---|---|---|---|",
    ]
    for p in report.get("parts", []):
        m = p.get("metrics") or {}
        result = _summary(p) if p.get("status") == "ok" else f"**{p.get('reason')}**"
        if p.get("status") != "ok" and m:
            result += f" ({_summary(p)})"
        lines.append(
            f"| `{p['name']}` | {p.get('status')} | {p.get('seconds')} "
            f"({p.get('limit_s', '—')}) | {result} | {_fmt(m.get('peak_mem_mb'), 0)} | "
            f"{_fmt(m.get('gpu_mem_mb_suggested'), 0)} |"
        )
    if "complete" in report:
        lines += ["", "Report complete: **" + ("yes" if report["complete"] else "NO") + "**"]
        lines += [f"- {x}" for x in report.get("problems", [])]
    lines += ["", "## Details", ""]
    for p in report.get("parts", []):
        m = {k: v for k, v in (p.get("metrics") or {}).items() if not k.startswith("_")}
        lines += [
            f"### {p['name']} — {p.get('what')}",
            "",
            "```json",
            json.dumps(m, indent=1, default=str)[:6000],
            "```",
            "",
        ]
    lines += ["## How the numbers are computed", ""]
    lines += [f"- **{k}**: {v}" for k, v in report.get("formulas", {}).items()]
    return "\n".join(lines) + "\n"
