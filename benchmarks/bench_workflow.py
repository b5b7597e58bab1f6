"""Time the whole quick-preset workflow, `snakemake --cores 2 all`, in a fresh temporary copy.

    python benchmarks/bench_workflow.py [--cores 2] [--target all]
    python benchmarks/bench_workflow.py --estimate [--results results]

Target: ≤ 15 min on a 2-core machine.  The first form runs the workflow in a fresh copy and prints
the wall time and the slowest jobs (from the per-rule benchmark files).  ``--estimate`` reads the
benchmark files of an existing run instead and prints the total CPU time of its jobs: divided by
the core count it is a lower bound of the wall time on idle cores, and unlike wall time it does not
depend on what else the machine was doing.
"""

import argparse
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
    args = ap.parse_args()
    if args.estimate:
        rows = _benchmarks(Path(args.results))
        cpu = sum(r[3] for r in rows)
        print(
            f"{len(rows)} jobs: total CPU time {cpu:.0f} s -> >= {cpu / int(args.cores) / 60:.1f} "
            f"min wall on {args.cores} idle cores (target <= 15 min)"
        )
        _table(rows)
        return
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "attnbias"
        shutil.copytree(
            ROOT, dest, ignore=shutil.ignore_patterns(".venv", "results", ".snakemake", ".git")
        )
        snakemake = Path(sys.executable).parent / "snakemake"
        t0 = time.perf_counter()
        res = subprocess.run(
            [str(snakemake), "--cores", args.cores, args.target],
            cwd=dest,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if res.returncode:
            print(res.stderr[-4000:])
            raise SystemExit(res.returncode)
        rows = _benchmarks(dest / "results")
    print(
        f"snakemake --cores {args.cores} {args.target}: {wall:.1f} s wall   target <= 900 s  "
        f"{'OK' if wall <= 900 else 'OVER'}"
    )
    _table(rows)


def _benchmarks(results: Path) -> list[tuple]:
    rows = []
    for f in (results / "benchmarks").rglob("*.tsv"):
        b = pd.read_csv(f, sep="\t")
        cpu = float(
            pd.to_numeric(b.get("cpu_time", pd.Series([0.0])), errors="coerce").fillna(0.0).iloc[0]
        )
        name = str(f.relative_to(results / "benchmarks").with_suffix(""))
        rows.append(
            (
                name,
                float(b["s"].iloc[0]),
                float(pd.to_numeric(b["max_rss"], errors="coerce").fillna(0).iloc[0]),
                cpu,
            )
        )
    return rows


def _table(rows) -> None:
    print(f"{'job':<48}{'wall s':>9}{'CPU s':>9}{'max RSS [MB]':>14}")
    for name, s, rss, cpu in sorted(rows, key=lambda r: -r[3])[:20]:
        print(f"{name:<48}{s:>9.1f}{cpu:>9.1f}{rss:>14.0f}")


if __name__ == "__main__":
    main()
