"""The GPU check's command, ``python -m attnbias.gpu_check`` (docs/gpu.md).

Each part (:data:`attnbias.gpu_check.parts.PARTS`) runs in a child process forked from this one
(torch and transformers are imported once, before any CUDA use) under its own time limit; a part
that fails, hangs or runs out of its time is killed and recorded with the reason, and the next one
starts.  The whole run keeps to ``--budget`` seconds (default 900 = 15 min on a GPU, 300 with
``--cpu``): a part never gets more than what is left.  The report is rewritten after every part:
``gpu_check.json`` (machine-readable; :func:`attnbias.gpu_check.report.report_problems` says
whether it is complete) and ``gpu_check.md``, plus one log per part.  Exit status: 0 when every
part passed, 1 otherwise, 2 when the report is incomplete.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from attnbias.gpu_check.parts import PARTS, preload, run_part
from attnbias.gpu_check.report import FORMULAS, markdown, report_problems

COMMAND = "python -m attnbias.gpu_check"


def machine_info(cpu: bool) -> dict:
    """What the report was measured on (no CUDA initialisation in this process)."""
    import torch
    import transformers

    info = {
        "hostname": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda_runtime": torch.version.cuda,
        "cpu_count": os.cpu_count(),
        "mode": "cpu" if cpu else "gpu",
    }
    try:  # nvidia-smi answers without creating a CUDA context here
        import subprocess

        q = "name,memory.total,driver_version,clocks.max.sm,power.limit"
        res = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if res.returncode == 0:
            info["nvidia_smi"] = res.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _child(name: str, cpu: bool, result_file: str, log_file: str, workdir: str) -> None:
    """Run one part in a forked child: output to its log, result (or error) to ``result_file``."""
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        metrics = run_part(name, cpu, Path(workdir))
        failure = metrics.pop("_failure", None)
        out = {"status": "failed" if failure else "ok", "metrics": metrics}
        if failure:
            out["reason"] = str(failure)
    except BaseException as exc:  # recorded, never raised past the child
        traceback.print_exc()
        out = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:2000]}
    Path(result_file).write_text(json.dumps(out, default=_jsonable))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def run_one(name: str, cpu: bool, limit: float, out: Path) -> dict:
    """Run part ``name`` in a forked child under ``limit`` seconds; its report entry."""
    spec = PARTS[name]
    log = out / f"{name}.log"
    result = out / f".{name}.result.json"
    result.unlink(missing_ok=True)
    work = out / "work" / name
    work.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("fork")
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(name, cpu, str(result), str(log), str(work)))
    proc.start()
    proc.join(limit)
    entry = {"name": name, "kind": spec["kind"], "what": spec["what"], "limit_s": round(limit)}
    if proc.is_alive():
        proc.kill()
        proc.join(30)
        entry.update(status="timeout", reason=f"killed at its time limit of {limit:.0f} s")
    elif result.exists():
        entry.update(json.loads(result.read_text()))
        result.unlink()
    else:
        entry.update(status="failed", reason=f"the part's process died (exit code {proc.exitcode})")
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    if entry["status"] != "ok":
        entry["log_tail"] = _tail(log)
    return entry


def write_report(report: dict, out: Path) -> None:
    """``report`` as ``gpu_check.json`` and ``gpu_check.md`` in the folder ``out``."""
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=_jsonable) + "\n")
    (out / "gpu_check.md").write_text(markdown(report))


def main(argv=None) -> int:
    """The command with the arguments ``argv`` (default: the command line); its exit status."""
    ap = argparse.ArgumentParser(
        prog=COMMAND,
        description="Check a GPU before the paper preset: CUDA tests, throughput/MFU benchmarks, "
        "a short training loop of every GPU training family, peak GPU memory (docs/gpu.md).",
    )
    ap.add_argument("--out", default="gpu-check", help="report folder (created)")
    ap.add_argument("--cpu", action="store_true", help="tiny CPU mode (CI): same parts, tiny sizes")
    ap.add_argument("--parts", nargs="*", help="run only these parts (default: all)")
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds for the whole run (default 900 on a GPU, 300 with --cpu)",
    )
    ap.add_argument("--list", action="store_true", help="list the parts and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, spec in PARTS.items():
            print(f"{name:26s} {spec['limit']:4d} s  {spec['what']}")
        return 0
    names = args.parts or list(PARTS)
    unknown = sorted(set(names) - set(PARTS))
    if unknown:
        ap.error(f"unknown parts {unknown}; known: {list(PARTS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    budget = args.budget or (300.0 if args.cpu else 900.0)
    started = time.perf_counter()
    preload()
    report = {
        "title": "attnbias GPU check",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])]),
        "budget_s": budget,
        "machine": machine_info(args.cpu),
        "formulas": FORMULAS,
        "parts": [],
    }
    for name in names:
        left = budget - (time.perf_counter() - started)
        # the tiny CPU mode keeps the GPU limits: on a loaded CI machine a tiny part took more
        # than half of its GPU limit (fastrates_bert: 19 s alone, over 35 s beside other jobs)
        limit = min(PARTS[name]["limit"], left)
        if limit < 5:
            entry = {
                "name": name,
                "kind": PARTS[name]["kind"],
                "what": PARTS[name]["what"],
                "status": "skipped",
                "seconds": 0.0,
                "reason": f"the run's budget of {budget:.0f} s was spent",
            }
        else:
            print(f"[gpu_check] {name} (limit {limit:.0f} s) ...", flush=True)
            entry = run_one(name, args.cpu, limit, out)
        print(
            f"[gpu_check] {name}: {entry['status']} in {entry['seconds']} s"
            + (f" — {entry.get('reason')}" if entry["status"] != "ok" else ""),
            flush=True,
        )
        report["parts"].append(entry)
        report["total_s"] = round(time.perf_counter() - started, 1)
        write_report(report, out)
    problems = report_problems(report, names)
    report["complete"] = not problems
    report["problems"] = problems
    write_report(report, out)
    print(markdown(report))
    if problems:
        print("INCOMPLETE REPORT:\n  " + "\n  ".join(problems), flush=True)
        return 2
    return 0 if all(p["status"] == "ok" for p in report["parts"]) else 1
