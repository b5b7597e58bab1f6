"""Time the whole quick-preset workflow, `snakemake --cores 2 all`, in a fresh temporary copy.

    python benchmarks/bench_workflow.py [--cores 2] [--target all]

Target: ≤ 15 min on a 2-core machine.  Prints the wall time and the slowest jobs (from the
per-rule benchmark files).
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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "attnbias"
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".venv", "results", ".snakemake", ".git"))
        snakemake = Path(sys.executable).parent / "snakemake"
        t0 = time.perf_counter()
        res = subprocess.run([str(snakemake), "--cores", args.cores, args.target], cwd=dest, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if res.returncode:
            print(res.stderr[-4000:])
            raise SystemExit(res.returncode)
        rows = []
        for f in (dest / "results" / "benchmarks").rglob("*.tsv"):
            b = pd.read_csv(f, sep="\t")
            rows.append((f.stem, float(b["s"].iloc[0]), float(b["max_rss"].iloc[0])))
    print(f"snakemake --cores {args.cores} {args.target}: {wall:.1f} s wall   target <= 900 s  {'OK' if wall <= 900 else 'OVER'}")
    print(f"{'job':<40}{'s':>10}{'max RSS [MB]':>14}")
    for name, s, rss in sorted(rows, key=lambda r: -r[1])[:15]:
        print(f"{name:<40}{s:>10.1f}{rss:>14.0f}")


if __name__ == "__main__":
    main()
