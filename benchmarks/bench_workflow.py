"""Time the whole quick-preset workflow, `snakemake --cores 2 all`, in a fresh temporary copy.

    python benchmarks/bench_workflow.py [--cores 2] [--target all] [--keep DIR] [-- SNAKEMAKE ARGS]
    python benchmarks/bench_workflow.py --estimate [--results results]

Target: ≤ 600 s on a 2-core machine.  The first form runs the workflow in a fresh clone (kept in
``--keep DIR``, else deleted) and prints the wall time, the CPU by rule family and the costliest
jobs.  ``--estimate`` reads an existing run instead and prints the total CPU time of its jobs:
divided by the core count it is a lower bound of the wall time on idle cores, and unlike wall time
it does not depend on what else the machine was doing.  A job's CPU time (its process and its
children) and peak memory are read from its log (``attnbias.jobstats.log_usage``); its wall time
from its benchmark file where it has one.
"""

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", default="2")
    ap.add_argument("--target", default="all")
    ap.add_argument(
        "--estimate", action="store_true", help="summarise an existing run's benchmark files"
    )
    ap.add_argument("--results", default=str(ROOT / "results"))
    ap.add_argument("--keep", help="run in this new folder and keep it (default: a temporary one)")
    ap.add_argument("extra", nargs="*", help="more snakemake arguments, after --")
    args = ap.parse_args()
    if args.estimate:
        rows = _benchmarks(Path(args.results))
        cpu = sum(r[3] for r in rows)
        print(
            f"{len(rows)} jobs: total CPU time {cpu:.0f} s -> >= {cpu / int(args.cores) / 60:.1f} "
            f"min wall on {args.cores} idle cores (target <= 10 min)"
        )
        _families(rows)
        _table(rows)
        return
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(args.keep) if args.keep else Path(tmp) / "attnbias"
        if (ROOT / ".git").exists():  # a fresh clone: the committed state, nothing else
            subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
            source = "fresh clone of " + subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
        else:
            shutil.copytree(
                ROOT, dest, ignore=shutil.ignore_patterns(".venv", "results", ".snakemake")
            )
            source = "copy of " + str(ROOT)
        snakemake = Path(sys.executable).parent / "snakemake"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(
            [str(snakemake), "--cores", args.cores, args.target, *args.extra],
            cwd=dest,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode:
            print(res.stderr[-4000:])
            raise SystemExit(res.returncode)
        rows = _benchmarks(dest / "results")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"{source}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}")
    print(
        f"snakemake --cores {args.cores} {args.target} {' '.join(args.extra)}: {wall:.1f} s wall "
        f"({wall / 60:.1f} min), {cpu:.0f} CPU-s in all processes   target <= 600 s  "
        f"{'OK' if wall <= 600 else 'OVER'}"
    )
    _families(rows, cpu)
    _table(rows)


def _benchmarks(results: Path) -> list[tuple]:
    """(job, wall s, max RSS MB, CPU s) per job log that records its usage; the job is its log's
    path under logs/ (``maxmargin_compute_fig1``, ``lowrank_lm_train/sa0_mlp0.1``)."""
    rows = []
    for f in sorted((results / "logs").rglob("*.log")):
        m = re.search(r"cpu: ([\d.]+) s, max RSS (\d+) MB", f.read_text(errors="replace"))
        if not m:
            continue
        name = str(f.relative_to(results / "logs").with_suffix(""))
        bench = results / "benchmarks" / f"{name}.tsv"
        wall = float(pd.read_csv(bench, sep="\t")["s"].iloc[0]) if bench.exists() else float("nan")
        rows.append((name, wall, float(m[2]), float(m[1])))
    return rows


def _families(rows, total_cpu: float | None = None) -> None:
    """CPU time per rule family (a job's log is logs/<rule>/<paper>/<name>[/<batch>]: computations
    and gathers per group, training per sweep; plots and claims are pooled as ``<paper> plots`` /
    ``<paper> claims``); with ``total_cpu`` (every process of the run), the rest is the jobs
    without benchmark files (downloads, the summary) plus Snakemake itself."""
    fam: dict = {}
    for name, s, _, cpu in rows:
        parts = name.split("/")
        if len(parts) < 3:  # a job of no table entry (the claims summary, ...)
            rule = f"{parts[0].split('_')[0]} plots and summaries"
        elif parts[0] == "check":
            rule = f"{parts[1]} claims"
        elif parts[0] in ("instance", "svm"):
            rule = f"{parts[1]} instance and svm stages"
        elif parts[0] in ("compute", "gather", "precomputed", "train"):
            rule = f"{parts[1]}_{parts[0]}_{parts[2]}"
        else:
            rule = f"{parts[1]} plots and summaries"
        f = fam.setdefault(rule, [0, 0.0, 0.0])
        f[0] += 1
        f[1] += s
        f[2] += cpu
    print(f"{'rule family':<40}{'jobs':>6}{'wall s':>9}{'CPU s':>9}")
    for name, (n, s, cpu) in sorted(fam.items(), key=lambda kv: -kv[1][2]):
        print(f"{name:<40}{n:>6}{s:>9.1f}{cpu:>9.1f}")
    if total_cpu is not None:
        rest = total_cpu - sum(r[3] for r in rows)
        print(f"{'(Snakemake itself: DAG, scheduling, starts)':<40}{'':>6}{'':>9}{rest:>9.1f}")
    print()


def _table(rows) -> None:
    print(f"{'job':<48}{'wall s':>9}{'CPU s':>9}{'max RSS [MB]':>14}")
    for name, s, rss, cpu in sorted(rows, key=lambda r: -r[3])[:20]:
        print(f"{name:<48}{s:>9.1f}{cpu:>9.1f}{rss:>14.0f}")


if __name__ == "__main__":
    main()
