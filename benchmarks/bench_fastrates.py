"""Benchmark the fastrates computations (issue [2/8] target: all synthetic figures ≤ 60 s on one
core).

    python benchmarks/bench_fastrates.py

Times each fastrates synthetic group (its three stages, ``run_stages``) with the
settings of ``config.yaml`` (validated) and prints a table.  Threads are pinned
to one before numpy is imported.  Table 1 is fitted from the Fig 2 runs and has no computation
of its own.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import time  # noqa: E402

from attnbias.analysis.fastrates import rate_table  # noqa: E402
from attnbias.table.stages import run_stages  # noqa: E402
from attnbias.workflow import load_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ("fig2", "fig3", "fig5", "fig8", "fig9", "fig10")
TARGET_S = 60.0


def main():
    cfg = load_config(ROOT)["fastrates"]
    print(f"{'computation':<16}{'wall [s]':>10}{'rows':>8}  runs")
    total = 0.0
    frames = {}
    for group in GROUPS:
        t0 = time.perf_counter()
        df, _ = run_stages("fastrates", group, cfg[group])
        dt = time.perf_counter() - t0
        total += dt
        frames[group] = df
        runs = df.groupby(["method", "lr", "seed", "init"]).ngroups
        print(f"{group:<16}{dt:>10.2f}{len(df):>8}  {runs}")
    t0 = time.perf_counter()
    rate_table(frames["fig2"])
    dt = time.perf_counter() - t0
    total += dt
    print(f"{'table1 (fit)':<16}{dt:>10.2f}")
    verdict = "OK" if total <= TARGET_S else "OVER"
    print(f"{'total':<16}{total:>10.2f}          target <= {TARGET_S:g} s  {verdict}  (1 thread)")


if __name__ == "__main__":
    main()
