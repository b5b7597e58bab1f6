"""lowrank Fig 2 (associative recall) at the paper preset's size, every run of the figure trained
side by side on one GPU, written as the workflow writes it: the plot-ready table committed under
``workflow/precomputed/lowrank/fig2/`` for ``--config scale=paper gpu_results=precomputed``
(docs/gpu.md, "lowrank Fig 2 on a GPU").

    python -m attnbias.gpu_check.recall --out /tmp/fig2 [--seeds 0 ...] [--max-seconds 560] \
        [--checkpoint-dir DIR] [--runs-from PART/runs ...] [--gather-only] [--pack] [--commit SHA]

The settings are the paper preset's (``config.yaml`` overlaid by ``workflow/presets/paper.yaml``,
read by :func:`attnbias.workflow.load_config`); the runs are
:func:`attnbias.experiments.lowrank.recall.train_recall_runs` (the function behind the workflow's
``train`` jobs of this sweep, here all (λ, seed) points in one model), each run's table is saved as
the ``train`` job saves it (``runs/lam<λ>_seed<seed>.{csv,json}``) and the plot-ready table
``fig2.{csv,json}`` is :func:`~attnbias.experiments.lowrank.recall.gather_fig2` of them, the
workflow's ``gather``.  Its sidecar gets ``production``: device, torch, commit, date, settings,
command, timings, and ``code_sha256``, the digest of every package source file the table depends
on: the import closure of this entry point (:func:`attnbias.closure.code_closure`, which also
makes the workflow jobs' ``code`` inputs), so no list of files is kept by hand.

Needs torch, numpy, pandas and PyYAML, not Snakemake; run it from a checkout of the repository.
A smoke test (the runs of seed 0 at the paper sizes, 150 updates; prints seconds per update and
the predicted training time of the part)::

    python -m attnbias.gpu_check.recall --out /tmp/smoke --steps 150 --seeds 0

Cost on one H100 (2026-11-27, float32 like every recall run: no TF32, no bf16): a training update
of R runs side by side took 4.5 ms (R = 1), 14.6 ms (R = 6), 25.9 ms (R = 12) and 39.0 ms
(R = 18); 42.6 ms at R = 18 with the metrics of every 50th update computed in turn (they now
run beside the training), so the whole figure (20,000 updates) needs about 13-14 minutes of GPU
time.  It is therefore made in parts, one seed (6 runs, about 5.5 minutes) per call, each within
a time budget::

    python -m attnbias.gpu_check.recall --out /tmp/seed0 --seeds 0 --max-seconds 560 \
        --checkpoint-dir /tmp/ckpt --pack --commit <sha>

and gathered where the parts' files are (``--gather-only --runs-from <part>/runs …``, no GPU).
A part out of time stops in time to save its checkpoint and exits with status 3; the same
command resumes from it where the checkpoint folder is still there (the same machine).

Resumable in two ways: from the checkpoint (all runs together, every ``--checkpoint-every``
updates and when the budget ends; large: weights and Adam moments of every run), and run by run:
a run whose files are in ``<out>/runs`` or in ``--runs-from`` (the ``runs/`` of an earlier part,
same settings; the part's ``production.json`` beside it goes into the table's provenance) is not
trained again.  ``--pack`` writes ``fig2.tar.gz`` (once every run is done; else ``runs.tar.gz``,
the finished runs) in pieces of at most 15 MiB: ``cat fig2.tar.gz.* | tar -xzf -`` joins and
unpacks them.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from attnbias.gpu_check.preset import ROOT, paper_settings

COMMAND = "python -m attnbias.gpu_check.recall"
ENTRY = "gpu_check.recall"  # this module, as attnbias.closure names it
# what the table's sidecar keeps of each earlier part's production.json (--runs-from)
PART_KEYS = ("command", "date_utc", "commit", "device", "torch", "cuda", "trained_here",
             "seconds_per_update", "train_wall_s", "gpu_peak_mem_mb", "status")
PIECE = 15 * 2**20  # bytes per packed piece (the device returns files of at most 16 MiB)
log = logging.getLogger("attnbias.gpu_check.recall")


def run_label(lam: float, seed: int) -> str:
    """A run's file stem as the workflow names it (``lam0.3_seed0``)."""
    return f"lam{lam:g}_seed{seed}"


def paper_block(steps: int | None) -> dict:
    """The paper preset's ``lowrank: fig2`` block (validated where jsonschema is installed), with
    ``steps`` in place of the preset's where given."""
    block = dict(paper_settings()["lowrank"]["fig2"])
    if steps is not None:
        block["steps"] = int(steps)
    return block


def commit(given: str | None) -> str | None:
    """The code's commit: ``given`` (``--commit``), else the checkout's ``HEAD``, else the
    environment's ``ATTNBIAS_COMMIT`` (a copy without ``.git``)."""
    if given:
        return given
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=5, check=False)  # fmt: skip
        return out.stdout.strip() or os.environ.get("ATTNBIAS_COMMIT")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("ATTNBIAS_COMMIT")


def code_hashes() -> dict:
    """``{path: sha256 (16 hex digits)}`` of every package source file the table depends on: the
    import closure of this entry point (:func:`attnbias.closure.code_closure`: this module and
    every ``attnbias`` module it imports, transitively: the runs, the gather, the model, the
    data, the metrics, the engine and ``io``), paths relative to the repository."""
    from attnbias.closure import code_closure

    return {
        p: hashlib.sha256((ROOT / p).read_bytes()).hexdigest()[:16] for p in code_closure(ENTRY)
    }


def finished(path: Path, record: dict, lam: float, seed: int) -> bool:
    """Whether ``path`` holds the finished run (lam, seed) of these settings."""
    meta_path = path.with_suffix(".json")
    if not (path.exists() and meta_path.exists()):
        return False
    meta = json.loads(meta_path.read_text())
    return (meta.get("settings") == record and meta.get("lam") == lam
            and meta.get("seed") == seed and meta.get("control", "none") == "none")  # fmt: skip


def pack(out: Path, name: str, members: list[Path]) -> list[str]:
    """``<name>.tar.gz`` of ``members`` (paths relative to ``out``) in pieces of at most 15 MiB:
    ``<name>.tar.gz.00``, ``.01``, … (``cat <name>.tar.gz.* | tar -xzf -`` joins them; gzip: xz
    took minutes for the table)."""
    import tarfile

    whole = out / f"{name}.tar.gz"
    with tarfile.open(whole, "w:gz", compresslevel=6) as tar:
        for m in members:
            tar.add(out / m, arcname=str(m))
    data, pieces = whole.read_bytes(), []
    whole.unlink()
    for i in range(0, len(data), PIECE):
        piece = out / f"{name}.tar.gz.{i // PIECE:02d}"
        piece.write_bytes(data[i : i + PIECE])
        pieces.append(piece.name)
    return pieces


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog=COMMAND,
        description="lowrank Fig 2 at the paper preset's size, every run trained side by side on "
        "one GPU; the plot-ready table for workflow/precomputed/lowrank/fig2/ (docs/gpu.md).",
    )
    ap.add_argument("--out", required=True, type=Path, help="output folder")
    ap.add_argument("--steps", type=int, help="override the preset's steps (smoke test)")
    ap.add_argument("--lambdas", type=float, nargs="+", help="a part: these λ of the preset")
    ap.add_argument("--seeds", type=int, nargs="+", help="a part: these seeds of the preset")
    ap.add_argument("--max-seconds", type=float, help="budget of this call (stops and saves)")
    ap.add_argument("--reserve-seconds", type=float, default=90.0,
                    help="of the budget, kept for evaluation, saving, gathering and packing")
    ap.add_argument("--checkpoint-dir", type=Path, help="resume state (default <out>/checkpoint)")
    ap.add_argument("--checkpoint-every", type=int, default=2000, help="updates between saves")
    ap.add_argument("--runs-from", type=Path, nargs="*", default=[],
                    help="folders of finished run files of earlier parts")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--workers", type=int, help="threads drawing batches and computing metrics "
                    "(default: 8 on CUDA, 0 on the CPU)")
    ap.add_argument("--gather-only", action="store_true", help="gather finished runs, no training")
    ap.add_argument("--pack", action="store_true", help="write the tables as .tar.gz pieces")
    ap.add_argument("--commit", help="git commit of the code (where the copy has no .git)")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    use_cuda = args.device == "cuda" or (args.device == "auto" and _cuda_available())
    workers = args.workers if args.workers is not None else (8 if use_cuda else 0)
    if workers:  # many small LAPACK calls in threads: one BLAS thread each
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(name)s: %(message)s")  # fmt: skip

    import numpy as np
    import pandas as pd
    import torch

    from attnbias.experiments.lowrank.recall import (
        Paused,
        RecallSettings,
        gather_fig2,
        train_recall_runs,
    )
    from attnbias.io import save_data

    block = paper_block(args.steps)
    settings = RecallSettings.of({k: v for k, v in block.items()
                                  if k not in RecallSettings.sweep_fields()})  # fmt: skip
    record = json.loads(json.dumps(settings.record()))
    lambdas = [float(v) for v in block["lambdas"]]
    seeds = [int(v) for v in block["seeds"]]
    for name, chosen, grid in (("lambdas", args.lambdas, lambdas), ("seeds", args.seeds, seeds)):
        if chosen and not set(chosen) <= set(grid):
            ap.error(f"--{name} {chosen} are not all in the preset's {grid}")
    grid = [(lam, seed) for lam in lambdas for seed in seeds]  # the workflow's order
    part = [(lam, seed) for lam, seed in grid
            if (not args.lambdas or lam in args.lambdas) and (not args.seeds or seed in args.seeds)]
    out = args.out
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    found = {}
    for lam, seed in grid:
        for folder in [runs_dir, *args.runs_from]:
            path = folder / f"{run_label(lam, seed)}.csv"
            if finished(path, record, lam, seed):
                found[(lam, seed)] = path
                break
    todo = [] if args.gather_only else [p for p in part if p not in found]
    device = torch.device("cuda" if use_cuda else "cpu")
    prov = {
        "command": " ".join([COMMAND, *(sys.argv[1:] if argv is None else map(str, argv))]),
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit(args.commit),
        "code_sha256": code_hashes(),
        "device": torch.cuda.get_device_name(device) if use_cuda else platform.processor()
        or platform.machine(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda if use_cuda else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "cpus": os.cpu_count(),
        "workers": workers,
        "preset": "paper",
        "settings": record,
        "points": [list(p) for p in grid],
        "trained_here": [list(p) for p in todo],
        "batch_runs": len(todo),
    }
    log.info("%d runs of %d to train here (%s), %d finished, on %s", len(todo), len(grid),
             todo, len(found), prov["device"])  # fmt: skip
    status = "gathered"
    if todo:
        ckpt_dir = args.checkpoint_dir or out / "checkpoint"
        ckpt = ckpt_dir / ("fig2_" + "_".join(run_label(*p) for p in todo)[:150] + ".pt")
        if ckpt.exists():
            state = torch.load(ckpt, map_location="cpu", weights_only=False)
            prov["resumed_from_row"] = state.get("row", state.get("epoch"))  # ("epoch": older)
        stamps: list[float] = []
        budget = None if args.max_seconds is None else args.max_seconds - args.reserve_seconds

        def stop(step):
            if use_cuda:
                torch.cuda.synchronize()
            stamps.append(time.monotonic())
            return budget is not None and time.monotonic() - t_start > budget

        t_train = time.monotonic()
        try:
            tables = train_recall_runs(
                settings, todo, accelerator=device.type, checkpoint=ckpt,
                checkpoint_every=args.checkpoint_every, stop=stop, data_workers=workers,
                metric_workers=workers,
            )  # fmt: skip
            status = "finished"
        except Paused as p:
            tables, status = None, f"paused at step {p.step}"
        prov["train_wall_s"] = time.monotonic() - t_train
        chunk = settings.log_every  # updates per engine row
        rows = np.diff(stamps)  # row 2 on (the first row warms up)
        if len(rows):
            per = statistics.median(rows) / chunk
            prov["seconds_per_update"] = per
            prov["timing"] = (f"median row of {chunk} updates (and a metrics pass of every run) "
                              f"over the {len(rows)} rows after the first")  # fmt: skip
            prov["predicted_train_s_at_preset_steps"] = per * paper_block(None)["steps"]
            log.info("seconds per update (R = %d, metrics included): %.4f; %d preset steps: "
                     "%.0f s of training", len(todo), per, paper_block(None)["steps"],
                     prov["predicted_train_s_at_preset_steps"])  # fmt: skip
        if use_cuda:
            prov["gpu_peak_mem_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
        if tables is not None:
            for (lam, seed), (df, meta) in zip(todo, tables, strict=True):
                path = runs_dir / f"{run_label(lam, seed)}.csv"
                save_data(df, meta, path, preset="paper")
                found[(lam, seed)] = path
            ckpt.unlink(missing_ok=True)  # the runs' files are safe
    missing = [p for p in grid if p not in found]
    parts = []  # the calls that trained the runs gathered here, when not this one
    for folder in args.runs_from:
        earlier = folder.parent / "production.json"
        if earlier.exists() and earlier.resolve() != (out / "production.json").resolve():
            doc = json.loads(earlier.read_text())
            parts.append({k: doc.get(k) for k in PART_KEYS})
    if parts:
        prov["parts"] = parts
    prov["status"], prov["missing"] = status, [list(p) for p in missing]
    if not missing:
        t_gather = time.monotonic()
        df, meta = gather_fig2(
            [str(found[p]) for p in grid], lr=block["lr"], steps=block["steps"],
            solved_acc=block["solved_acc"], preset="paper",
        )  # fmt: skip
        prov["wall_s"] = time.monotonic() - t_start
        meta["production"] = prov
        save_data(df, meta, out / "fig2.csv", preset="paper")
        log.info("wrote %s (%d rows) in %.1f s", out / "fig2.csv", len(df),
                 time.monotonic() - t_gather)  # fmt: skip
        for p, run in zip(grid, meta["runs"], strict=True):
            log.info("λ=%g seed=%d accuracy %.4f (%s)", p[0], p[1], run["accuracy"], run["device"])
    else:
        log.info("%s; %d runs still missing before the gather: %s", status, len(missing), missing)
    prov["wall_s"] = time.monotonic() - t_start
    if args.pack:
        names = []
        if not missing:
            names += pack(out, "fig2", [Path("fig2.csv"), Path("fig2.json")])
        done = sorted(p.relative_to(out) for p in runs_dir.glob("*.*"))
        if missing and done:  # the finished runs, for the next part (--runs-from)
            names += pack(out, "runs", done)
        prov["packed"] = names
        prov["wall_s"] = time.monotonic() - t_start
    (out / "production.json").write_text(json.dumps(prov, indent=2) + "\n")
    log.info("status: %s, %.0f s in all", status, prov["wall_s"])
    return 3 if status.startswith("paused") else 0


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
