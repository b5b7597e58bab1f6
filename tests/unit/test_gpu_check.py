"""The ``--cpu`` (tiny) mode of the GPU check, ``python -m attnbias.gpu_check``: every part runs
and the report is complete, so the GPU check cannot rot between the rare runs on a GPU."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnbias.gpu_check.device import memory
from attnbias.gpu_check.parts import PARTS
from attnbias.gpu_check.report import report_problems

ROOT = Path(__file__).resolve().parents[2]

# What the GPU machines' Python lacks of this project's dependencies (it has torch, transformers,
# tokenizers, safetensors, numpy, pandas, PyYAML, matplotlib, scikit-learn and pytest).  The CPU
# twins below run with these hidden, so a benchmark that needs one fails here, not on the GPU
# (bench_gpt2 validated the paper preset with jsonschema and failed there on 2026-11-27).
ABSENT_ON_GPU_MACHINES = ("snakemake", "datasets", "cvxopt", "jsonschema")

HIDE = """import sys

ABSENT = set({absent!r})


class Hide:
    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ABSENT:
            return None
        return self.finder.find_spec(name, path, target)

    def __getattr__(self, attr):
        return getattr(self.finder, attr)


sys.meta_path[:] = [Hide(f) for f in sys.meta_path]
"""


def gpu_machine_env(folder: Path) -> dict:
    """Environment for a child Python that cannot import :data:`ABSENT_ON_GPU_MACHINES` (a
    ``sitecustomize`` that hides them from every finder) and finds ``src/``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(HIDE.format(absent=ABSENT_ON_GPU_MACHINES))
    paths = [str(folder), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_hidden_modules_are_absent(tmp_path):
    code = (
        "import importlib.util, sys\n"
        f"names = {ABSENT_ON_GPU_MACHINES!r}\n"
        "assert all(importlib.util.find_spec(n) is None for n in names)\n"
        "import yaml, torch  # what the GPU machines have stays importable\n"
        "try:\n    import jsonschema\nexcept ModuleNotFoundError:\n    sys.exit(0)\n"
        "sys.exit(3)\n"
    )
    env = gpu_machine_env(tmp_path / "hide")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    env = gpu_machine_env(tmp_path_factory.mktemp("hide"))
    res = subprocess.run(
        [sys.executable, "-m", "attnbias.gpu_check", "--cpu", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert (out / "gpu_check.json").exists(), res.stdout[-3000:] + res.stderr[-3000:]
    return res, json.loads((out / "gpu_check.json").read_text()), out


@pytest.mark.slow
def test_cpu_mode_report_is_complete_and_every_part_passes(cpu_report):
    res, report, out = cpu_report
    assert report_problems(report) == [], report.get("problems")
    assert report["complete"] is True
    assert [p["name"] for p in report["parts"]] == list(PARTS)
    assert report["command"] == f"python -m attnbias.gpu_check --cpu --out {out}"
    failed = {p["name"]: p.get("reason") for p in report["parts"] if p["status"] != "ok"}
    assert not failed, failed
    assert res.returncode == 0, res.stdout[-3000:]
    tests = next(p for p in report["parts"] if p["name"] == "pytest_gpu")["metrics"]
    assert tests["collected"] >= 1 and tests["skipped"] == tests["collected"]  # no CUDA here
    md = (out / "gpu_check.md").read_text()
    assert all(f"`{name}`" in md for name in PARTS)


def _fake(status="ok", metrics=None, reason=None):
    entry = {"name": "bench_gpt2", "kind": "benchmark", "status": status}
    if metrics is not None:
        entry["metrics"] = metrics
    if reason is not None:
        entry["reason"] = reason
    return {"machine": {"mode": "gpu"}, "parts": [entry]}


def test_report_check_can_fail():
    good = dict(
        throughput=1.0,
        steady_step_s=1.0,
        achieved_tflops=1.0,
        final_train_loss=2.0,
        peak_mem_mb=10,
        mfu=0.4,
    )
    assert report_problems(_fake(metrics=good), ["bench_gpt2"]) == []
    assert report_problems(_fake(metrics=good), ["bench_gpt2", "bench_bert"])  # missing
    assert report_problems(_fake(metrics={**good, "mfu": float("nan")}), ["bench_gpt2"])
    assert report_problems(_fake(metrics={**good, "mfu": None}), ["bench_gpt2"])
    assert report_problems(_fake(status="timeout"), ["bench_gpt2"])  # no reason
    assert not report_problems(
        _fake(status="timeout", reason="killed at 60 s"), ["bench_gpt2"]
    )


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[
                pytest.mark.gpu,
                pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
            ],
        ),
    ],
)
def test_peak_memory_of_the_parts(device):
    """``attnbias.gpu_check.device.memory``, what every part reports: the host's peak RSS in the
    CPU mode; on CUDA the allocator's peak (here at least the two 64 MB matrices and their
    product) plus the context, and the suggested ``gpu_mem_mb`` (1.25 × that, rounded up to
    1 GB)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    a = torch.randn(4096, 4096, device=dev)
    assert math.isfinite(float((a @ a).sum()))
    m = memory(dev)
    assert m["peak_mem_mb"] > 0 and m["host_peak_rss_mb"] > 0
    if dev.type == "cuda":
        assert m["peak_allocated_mb"] >= 3 * 64
        assert m["peak_reserved_mb"] >= m["peak_allocated_mb"]
        assert abs(m["peak_mem_mb"] - m["peak_reserved_mb"] - m["context_mb"]) <= 1  # rounding
        assert m["gpu_mem_mb_suggested"] >= 1.25 * m["peak_mem_mb"]
        assert m["gpu_mem_mb_suggested"] % 1000 == 0
        assert m["peak_mem_mb"] < m["device_total_mb"]
    else:
        assert m["peak_mem_mb"] == m["host_peak_rss_mb"] and "gpu_mem_mb_suggested" not in m


def test_h100_report_in_the_repository_is_complete():
    report = json.loads((ROOT / "benchmarks/reports/gpu_check_h100_2026-11-24.json").read_text())
    assert report_problems(report) == []


@pytest.mark.slow
def test_side_by_side_cpu_smoke_runs_every_step(tmp_path):
    """``gpu_speed_side_by_side.py --cpu-smoke`` without the modules the GPU machines lack: one
    step of each kind runs (the reference is a stand-in that shows its options, as the real one
    does on a CPU; the other steps differ only in sizes and flags) and gets its ratio line."""
    ref = tmp_path / "ref.py"
    ref.write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "for f in ('--micro', '--accum', '--steps'):\n    p.add_argument(f, type=int)\n"
        "p.parse_args()\n"
    )
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_speed_side_by_side.py"), "--ref",
         str(ref), "--out", str(out), "--cpu-smoke", "--only", "ref32,proj32,vit_eager"],
        cwd=ROOT, env=gpu_machine_env(tmp_path / "hide"), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    log = (out / "log.txt").read_text() if (out / "log.txt").exists() else ""
    assert res.returncode == 0, res.stdout[-2000:] + log[-4000:]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    runs = {x["run"]: x for x in lines if "run" in x}
    assert set(runs) == {"ref32", "proj32", "vit_eager"}
    assert not [name for name, x in runs.items() if x.get("failed")]
    assert [x["micro"] for x in lines if "ratio" in x] == [32]
