"""Benchmark the lowrank computations (issue [4/8] targets), one thread.

    python benchmarks/bench_lowrank.py                 # fig1, figA, figL and every fig2 run
                                                       # of the quick preset
    python benchmarks/bench_lowrank.py --fig2-lambdas 0 3   # only these fig2 runs
    python benchmarks/bench_lowrank.py --fig2-lambdas 1 --side-by-side
                                                       # also the seeds of each λ side by side
    python benchmarks/bench_lowrank.py --ci            # the CI sizes (tests/config/ci_lowrank.yaml)

Targets: each toy (fig1, figA, figL) ≤ 10 s; the whole quick Fig 2 (every λ and seed) ≤ 300 s on
one core.  Threads are pinned to one before numpy and torch are imported.  Prints wall and CPU
(process) times; the targets are judged on CPU time, which is what an idle core would take (on a
shared machine the wall time grows with the load average, printed at the end).  The first fig2
run of the process also pays the one-time import of the optimiser's dependencies (torch._dynamo,
a few CPU seconds); ``--side-by-side`` trains the seeds of each λ together in one model
(``train_recall_runs``) after its runs one at a time, for the comparison of the two.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import copy  # noqa: E402
import time  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOY_TARGET_S, FIG2_TARGET_S = 10.0, 300.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--ci", action="store_true", help="use the CI sizes of tests/config/ci_lowrank.yaml"
    )
    ap.add_argument(
        "--side-by-side",
        action="store_true",
        help="also train the seeds of each fig2 λ side by side in one model",
    )
    ap.add_argument(
        "--fig2-lambdas",
        nargs="*",
        type=float,
        default=None,
        help="subset of the fig2 λ grid (default: all)",
    )
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from attnbias.experiments import lowrank as lr
    from attnbias.experiments.lowrank.recall import train_recall_runs
    from attnbias.workflow import load_config

    ci = [os.path.join(ROOT, "tests", "config", "ci_lowrank.yaml")] if args.ci else []
    cfg = load_config(ROOT, configfiles=ci)["lowrank"]
    rows = []
    for fig in ("fig1", "figA", "figL"):
        t0, c0 = time.perf_counter(), time.process_time()
        getattr(lr, f"compute_{fig}")(**cfg[fig])
        rows.append((fig, time.perf_counter() - t0, time.process_time() - c0, TOY_TARGET_S))
    f2 = copy.deepcopy(cfg["fig2"])
    lams = f2.pop("lambdas") if args.fig2_lambdas is None else args.fig2_lambdas
    seeds = f2.pop("seeds")
    f2.pop("lambdas", None)
    f2.pop("solved_acc", None)  # a setting of the gather, not of a run
    total, total_cpu = 0.0, 0.0
    for lam in lams:
        for seed in seeds:
            t0, c0 = time.perf_counter(), time.process_time()
            _, meta = lr.train_recall(f2, lam=lam, seed=seed, accelerator="cpu")
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            total, total_cpu = total + dt, total_cpu + dc
            rows.append(
                (f"fig2 run λ={lam:g} seed={seed} (acc {meta['accuracy']:.3f})", dt, dc, None)
            )
    rows.append(
        (
            f"fig2 total ({len(lams)} λ × {len(seeds)} seeds, {f2['steps']} steps)",
            total,
            total_cpu,
            FIG2_TARGET_S,
        )
    )
    if args.side_by_side:
        for lam in lams:
            t0, c0 = time.perf_counter(), time.process_time()
            out = train_recall_runs(f2, [(lam, seed) for seed in seeds], accelerator="cpu")
            accs = " ".join(f"{m['accuracy']:.3f}" for _, m in out)
            rows.append((f"fig2 λ={lam:g}, {len(seeds)} seeds side by side (acc {accs})",
                         time.perf_counter() - t0, time.process_time() - c0, None))  # fmt: skip
    print(f"{'computation':<52}{'wall [s]':>10}{'CPU [s]':>10}   target (CPU)")
    for name, dt, dc, target in rows:
        verdict = "" if target is None else f"<= {target:g} s  {'OK' if dc <= target else 'OVER'}"
        print(f"{name:<52}{dt:>10.2f}{dc:>10.2f}   {verdict}")
    print(
        f"(1 thread; preset {'CI' if args.ci else 'quick'}; load average {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
