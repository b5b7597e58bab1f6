"""The GPU check's report: whether it is complete (:func:`report_problems`), its markdown
(:func:`markdown`) and how its numbers are computed (:data:`FORMULAS`)."""

from __future__ import annotations

import json
import math

from attnbias.gpu_check.parts import PARTS

STATUSES = ("ok", "failed", "timeout", "skipped")

FORMULAS = {
    "MFU": "model FLOPs per item × items/s ÷ the device's dense bf16 peak (H100 SXM: 989 TFLOP/s)",
    "ViT": (
        "per image, forward: 2·P·(p²·C)·d (patch embedding) + L·[2·n·d·4d (q, k, v, o) + "
        "2·2·n²·d (scores, values) + 2·2·n·d·m (MLP)] + 2·d·classes, n = P + 1 tokens; "
        "training = 3 × forward (attnbias.models.flops.vit_forward_flops)"
    ),
    "GPT-2": (
        "per token: 6·N + 12·L·T·d (PaLM convention; N = the matrices, the tied embedding once; "
        "attention counted over the full context T; attnbias.models.gpt2.flops_per_token)"
    ),
    "BERT": (
        "per token, forward: L·[2·(4d² + 2·d·m) + 2·2·n·d], n = sequence length; training = 3 × "
        "forward (attnbias.models.flops.bert_forward_flops_per_token; embeddings, pooler and head "
        "not counted)"
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


def report_problems(report: dict, expected: list[str] | None = None) -> list[str]:
    """Why ``report`` is incomplete (empty when complete): every expected part present (default:
    every part of :data:`~attnbias.gpu_check.parts.PARTS`), each either ``ok`` with its required
    metrics as finite numbers, or not ok with a reason."""
    problems = []
    parts = {p.get("name"): p for p in report.get("parts", [])}
    mode = report.get("machine", {}).get("mode")
    for name in expected if expected is not None else list(PARTS):
        p = parts.get(name)
        if p is None:
            problems.append(f"{name}: missing from the report")
            continue
        status = p.get("status")
        if status not in STATUSES:
            problems.append(f"{name}: unknown status {status!r}")
        elif status != "ok":
            if not str(p.get("reason") or "").strip():
                problems.append(f"{name}: {status} without a reason")
            continue
        metrics = p.get("metrics") or {}
        for key in required_metrics(name, mode == "gpu"):
            v = metrics.get(key)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                problems.append(f"{name}: metric {key!r} is not a finite number ({v!r})")
    return problems


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
