"""Benchmark the maxmargin computations (issue [1/8] targets).

    python benchmarks/bench_maxmargin.py                 # Figs 1–5, 8 together, then Fig 9/10
    python benchmarks/bench_maxmargin.py --groups fig1   # some groups only (fig9: the study)

Targets: Figs 1–5 and 8 together ≤ 30 s wall; the Fig 9/10 study (9 d × 1000 trials × 1000 NGD
steps + the QPs) ≤ 60 s on one core.  Threads are pinned to one before numpy is imported.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

from attnbias.table.stages import run_stages  # noqa: E402
from attnbias.workflow import load_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


GROUPS = ("fig1", "fig2", "fig3", "fig4", "fig5", "fig8")


def main():
    ap = argparse.ArgumentParser(description="Time the maxmargin synthetic computations.")
    ap.add_argument("--groups", nargs="+", default=[*GROUPS, "fig9"], choices=[*GROUPS, "fig9"])
    groups = ap.parse_args().groups
    cfg = load_config(ROOT)["maxmargin"]
    rows = []
    total = 0.0
    for group in (g for g in GROUPS if g in groups):
        t0 = time.perf_counter()
        run_stages("maxmargin", group, cfg[group])
        dt = time.perf_counter() - t0
        total += dt
        rows.append((group, dt))
    print(f"{'computation':<28}{'wall [s]':>10}")
    for g, dt in rows:
        print(f"{g:<28}{dt:>10.2f}")
    print(
        f"{'Figs 1-5, 8 together':<28}{total:>10.2f}   target <= 30 s  "
        f"{'OK' if total <= 30 else 'OVER'}"
    )
    if "fig9" not in groups:
        return
    t0 = time.perf_counter()
    df, _ = run_stages("maxmargin", "fig9", cfg["fig9"])
    t9 = time.perf_counter() - t0
    n = len(df)
    print(
        f"{'Fig 9/10 study':<28}{t9:>10.2f}   target <= 60 s  {'OK' if t9 <= 60 else 'OVER'}  "
        f"({n} trials, 1 thread)"
    )


if __name__ == "__main__":
    main()
