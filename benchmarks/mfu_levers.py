"""Which levers move the training MFU of GPT-2 124M and the maxmargin ViT-B/2 (bf16) on a GPU.

    PYTHONPATH=src python benchmarks/mfu_levers.py [--cpu] [--out FILE.jsonl]

One optimiser step (forward, backward, clipping, fused AdamW or SGD) is timed after warm-up
steps (which include any compilation), between CUDA synchronisations, for each variant:

- ``eager``: the engine's step as the paper preset runs it without compile;
- ``compile_model``: ``torch.compile(model)`` (what ``TrainConfig.compile`` does today);
- ``compile_step``: the model *and* its loss compiled together, so the bf16 → fp32 upcast of the
  logits and the log-softmax fuse instead of materialising an fp32 copy of the (B, T, V) logits;
- ``shift_labels`` (GPT-2): the loss over all T positions with the last target ignored, which
  avoids the sliced copy ``logits[:, :-1]``.

MFU = model FLOPs per step / step time / peak (989 TFLOP/s dense bf16 on an H100 SXM); model FLOPs
as in ``attnbias.models.gpt2.flops_per_token`` and ``attnbias.models.flops.vit_forward_flops``
(× 3).
Each variant prints one JSON line as soon as it is measured, so a time-out keeps what was done.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

from attnbias.models.flops import TRAIN_PER_FORWARD, peak_bf16, vit_forward_flops

PEAK = peak_bf16("H100")  # the H100 SXM's, whatever the device (the reports compare with it)


# kernel (GPU) or operator (CPU) names -> where a step's time goes; the first match wins, so the
# attention kernels (some are CUTLASS) come before the matrix multiplies and LayerNorm before the
# optimiser's norms.  Inductor names its fused kernels after the ops they hold.
KERNEL_GROUPS = (
    ("attention", r"flash|fmha|attention|sdpa|cudnn_sdp|cutlassF|cutlassB"),
    ("loss", r"log_softmax|nll_loss|cross_entropy|logsumexp"),
    ("layernorm", r"layer_norm|layernorm"),
    ("gelu", r"gelu|tanh"),
    ("optimizer", r"adam|sgd|multi_tensor|foreach|lpnorm|clip_grad|_amp_"),
    ("matmul", r"gemm|nvjet|xmma|cutlass|cublas|aten::(add)?mm$|aten::bmm|matmul|sm[89]0_"),
    ("conv", r"conv|implicit_convolve|winograd"),
    ("embedding", r"embedding|index_put|indexing_backward|scatter|gather"),
    ("copy/cast", r"copy|memcpy|memset|cast|convert|fill"),
)


class StepMarks:
    """The engine's ``after_backward`` hook of a timed benchmark: once per step, after its backward,
    synchronise and take the time (the interval between two marks is one whole step: update, next
    batch, forward, backward); reset the peak-memory counter after the ``warm`` warm-up steps, and
    with ``profile`` trace the last timed step (``self.prof``, stopped after it)."""

    def __init__(self, gpu: bool, warm: int, steps: int, profile: bool = False):
        self.gpu, self.warm, self.steps, self.profile = gpu, warm, steps, profile
        self.marks: list[float] = []
        self.prof = None

    def __call__(self, model, step: int, loss=None) -> None:
        if self.gpu:
            torch.cuda.synchronize()
        self.marks.append(time.perf_counter())
        if step == self.warm - 1 and self.gpu:
            torch.cuda.reset_peak_memory_stats()
        if self.profile and step == self.warm + self.steps - 1:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.gpu else [])
            self.prof = profile(activities=acts, record_shapes=True)
            self.prof.start()
        elif self.prof is not None and step == self.warm + self.steps:
            self.prof.stop()


def kernel_group(name: str) -> str:
    low = name.lower()
    return next((g for g, rx in KERNEL_GROUPS if re.search(rx, low)), "other")


def _matmul_role(shapes, dims: dict) -> str:
    flat = {int(x) for s in shapes or () if isinstance(s, (list, tuple)) for x in s}
    if dims.get("vocab") and dims["vocab"] in flat:
        return "lm_head"
    if dims.get("classes") and dims["classes"] in flat and dims.get("d") in flat:
        return "classifier"
    if dims.get("mlp") and dims["mlp"] in flat:
        return "mlp"
    return "attention_projections"


def profile_table(prof, dims: dict, top: int = 25, step_ms: float | None = None) -> dict:
    """Where one profiled training step goes: kernel time by :data:`KERNEL_GROUPS` (GPU kernels;
    on a CPU-only run the operators' own CPU time), the matrix multiplies split by role from their
    input shapes (``dims``: d, mlp, vocab, classes), and the ``top`` kernels.  ``step_ms``: the
    step's wall time, to show how busy the device was."""
    from torch.autograd import DeviceType

    events = list(prof.events())
    gpu = [e for e in events if e.device_type != DeviceType.CPU]
    if gpu:
        items = [(e.name, e.time_range.elapsed_us()) for e in gpu]
    else:
        items = [(e.name, e.self_cpu_time_total) for e in events if e.name.startswith("aten::")]
    groups, names, counts = defaultdict(float), defaultdict(float), defaultdict(int)
    for name, us in items:
        groups[kernel_group(name)] += us
        names[name] += us
        counts[name] += 1
    roles = defaultdict(float)
    for e in events:
        if e.device_type == DeviceType.CPU and e.name in ("aten::mm", "aten::addmm", "aten::bmm"):
            us = e.self_device_time_total if gpu else e.self_cpu_time_total
            roles[_matmul_role(e.input_shapes, dims)] += us
    total = sum(us for _, us in items)

    def ms(d):
        return {k: round(us / 1e3, 3) for k, us in sorted(d.items(), key=lambda kv: -kv[1])}

    top_names = sorted(names, key=lambda n: -names[n])[:top]
    out = {
        "timer": "GPU kernel time" if gpu else "CPU operator self time",
        "total_ms": total / 1e3,
        "groups_ms": ms(groups),
        "groups_frac": {g: round(us / total, 4) for g, us in groups.items()} if total else {},
        "matmul_roles_ms": ms(roles),
        "top": [
            {"name": n[:160], "group": kernel_group(n), "ms": round(names[n] / 1e3, 3),
             "calls": counts[n]}
            for n in top_names
        ],
    }  # fmt: skip
    if step_ms:
        out["step_ms"] = step_ms
        out["busy_frac"] = round(total / 1e3 / step_ms, 4)
    return out


def step_time(step, warm: int, iters: int, cuda: bool) -> float:
    for _ in range(warm):
        step()
    if cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        step()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters


def gpt2_loss(kind: str):
    def sliced(model, ids):
        logits = model(input_ids=ids).logits
        v = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].float().reshape(-1, v), ids[:, 1:].reshape(-1))

    def shifted(model, ids):
        logits = model(input_ids=ids).logits
        targets = F.pad(ids[:, 1:], (0, 1), value=-100)
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-100)

    return {"sliced": sliced, "shift_labels": shifted}[kind]


def run_gpt2(variant: str, loss_kind: str, micro: int, cpu: bool, device) -> dict:
    from attnbias.models.gpt2 import build_gpt2, flops_per_token

    dims = dict(n_embd=64, n_layer=2, n_head=2) if cpu else dict(n_embd=768, n_layer=12, n_head=12)
    vocab, ctx = (512, 64) if cpu else (50257, 1024)
    model = build_gpt2(vocab, ctx, eos_id=vocab - 1, pad_vocab_to=64, **dims).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1, fused=not cpu)
    ids = torch.randint(0, vocab, (micro, ctx), device=device)
    loss_fn = gpt2_loss(loss_kind)
    fwd = model
    if variant == "compile_model":
        fwd = torch.compile(model)
    elif variant == "compile_step":
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=not cpu):
            loss = loss_fn(fwd, ids)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    dt = step_time(step, 2 if cpu else 10, 2 if cpu else 20, not cpu)
    tokens = micro * ctx
    flops = flops_per_token(model, ctx) * tokens
    return dict(model="gpt2_124m", variant=variant, loss=loss_kind, micro_batch=micro,
                step_ms=dt * 1e3, tokens_per_s=tokens / dt, mfu=flops / dt / PEAK)  # fmt: skip


def run_vit(variant: str, batch: int, cpu: bool, device) -> dict:
    from attnbias.models.vit import build_vit

    dims = (64, 2, 2, 128) if cpu else (768, 12, 12, 3072)
    model = build_vit(32, 2 if not cpu else 8, 3, *dims, 10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.003, momentum=0.9)
    x = torch.randn(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def loss_fn(m, x, y):
        return F.cross_entropy(m(x).float(), y)

    fwd = model
    if variant == "compile_model":
        fwd = torch.compile(model)
    elif variant == "compile_step":
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=not cpu):
            loss = loss_fn(fwd, x, y)
        loss.backward()
        opt.step()

    dt = step_time(step, 2 if cpu else 10, 2 if cpu else 30, not cpu)
    patch = 8 if cpu else 2
    per_image = vit_forward_flops(32, patch, 3, dims[0], dims[1], dims[3], 10)
    flops = TRAIN_PER_FORWARD * per_image * batch
    return dict(model="vit_b2", variant=variant, batch=batch, step_ms=dt * 1e3,
                images_per_s=batch / dt, mfu=flops / dt / PEAK)  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    device = torch.device("cpu" if args.cpu else "cuda")
    if not args.cpu:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    micro = 2 if args.cpu else 16
    jobs = [
        lambda: run_gpt2("eager", "sliced", micro, args.cpu, device),
        lambda: run_gpt2("eager", "shift_labels", micro, args.cpu, device),
        lambda: run_vit("eager", 4 if args.cpu else 128, args.cpu, device),
        lambda: run_vit("compile_model", 4 if args.cpu else 128, args.cpu, device),
        lambda: run_vit("compile_step", 4 if args.cpu else 128, args.cpu, device),
        lambda: run_gpt2("compile_model", "sliced", micro, args.cpu, device),
        lambda: run_gpt2("compile_step", "sliced", micro, args.cpu, device),
        lambda: run_gpt2("compile_step", "shift_labels", micro, args.cpu, device),
    ]
    for job in jobs:
        try:
            row = job()
        except Exception as exc:  # record and go on: one broken lever must not hide the rest
            row = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        line = json.dumps(row)
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
        if not args.cpu:
            torch.cuda.empty_cache()
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
