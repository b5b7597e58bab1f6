"""Benchmark the nucnorm computations (issue [3/8] target: all figures ≤ 5 min on one core).

    python benchmarks/bench_nucnorm.py [p1 p2 ...]

Times each nucnorm group (its three stages, ``attnbias.table.stages.run_stages``) with the
settings of ``config.yaml`` (validated) and prints a table: wall and CPU time, recorded rows
and the figure's workload (runs and update counts; instance selection, whose premise runs add a
few thousand updates per candidate seed, is included in the time).  Threads are pinned to one before
numpy is imported.
"""

import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import time  # noqa: E402

from attnbias.table.stages import run_stages  # noqa: E402
from attnbias.workflow import load_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = ("p1", "p2", "p3", "p4", "p5")
TARGET_S = 300.0


def workload(fig: str, s: dict) -> str:
    """What the figure computes, in words (from its settings)."""
    if fig == "p1":
        return (
            f"{len(s['instances'])} instances x 2 models x {s['steps']} steps"
            f" + eta check {s['eta_check_steps']}"
        )
    if fig == "p2":
        return f"{len(s['seeds'])} instances (batched) x 2 models x {s['steps']} steps"
    if fig == "p3":
        return f"{len(s['valid_alphas']) + 2} inits (batched) x {s['steps']} steps"
    if fig == "p4":
        return f"2 inits (batched) x {s['steps']} steps"
    cells = len(s["n_values"]) * len(s["L_values"]) * len(s["d_values"])
    return f"{cells} cells x {s['instances']} instances x (SDP + QP)"


def main(figures):
    cfg = load_config(ROOT)["nucnorm"]
    print(f"{'figure':<8}{'wall [s]':>10}{'cpu [s]':>10}{'rows':>8}  workload")
    total = cpu_total = 0.0
    for fig in figures:
        t0, c0 = time.perf_counter(), time.process_time()
        df, _ = run_stages("nucnorm", fig, cfg[fig])
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        total += dt
        cpu_total += dc
        print(f"{fig:<8}{dt:>10.2f}{dc:>10.2f}{len(df):>8}  {workload(fig, cfg[fig])}", flush=True)
    verdict = "OK" if total <= TARGET_S else "OVER"
    print(
        f"{'total':<8}{total:>10.2f}{cpu_total:>10.2f}          target <= {TARGET_S:g} s wall  "
        f"{verdict}  (1 thread)"
    )
    print("(wall > cpu means the core was shared with other processes)")


if __name__ == "__main__":
    main(sys.argv[1:] or FIGURES)
