"""The gather of Figs 6–7 of Tarzanagh et al. 2023: the ViT runs of the ``seeds`` (one run per
seed, :func:`attnbias.experiments.maxmargin.vit.train_vit`) into one plot-ready table per figure,
with a ``seed`` column (docs/outputs.md#claims-over-seeds).

A module of its own, so that a change here regathers the tables without retraining the runs."""

from __future__ import annotations

import pandas as pd

from ...io import gathered_control, load_data

SEED_COLUMN = {
    "seed": "the run's training seed (initialisation, shuffling, augmentation): one of `seeds`",
}
# what each run records for itself (kept per seed in ``runs_by_seed``); the rest is shared
PER_RUN = ("seed", "device", "probe_peak", "final_probe_acc")


def run_seed(meta: dict) -> int:
    """The training seed of a run: its ``seed`` (a run from before the seeds recorded it in its
    settings)."""
    if "seed" in meta:
        return int(meta["seed"])
    return int((meta.get("settings") or {}).get("seed", 0))


def gather_vit(parts: list[str], control: str = "none") -> tuple[pd.DataFrame, dict]:
    """One figure's table (``fig6`` maps or ``fig7`` curves) of every seed's run, in seed order.

    Parameters
    ----------
    parts : list of str
        The runs' CSVs of this table, one per seed.
    control : str
        The negative control the workflow runs under; every run must have recorded the same.

    Returns
    -------
    tuple of (DataFrame, dict)
        The runs' rows with a first column ``seed``; the meta of the first run less its per-run
        records (:data:`PER_RUN`), which are under ``runs_by_seed`` (``{"<seed>": {...}}``), and
        ``seeds`` (sorted).  The runs must share their settings (the seed aside) and columns.
    """
    runs = [load_data(p) for p in parts]
    if not runs:
        raise ValueError("no run to gather")
    gathered_control(control, [m for _, m in runs])
    runs = sorted(runs, key=lambda r: run_seed(r[1]))
    seeds = [run_seed(m) for _, m in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"two runs of one seed: {seeds} ({parts})")
    first = runs[0][1]
    for (df, m), s in zip(runs, seeds, strict=True):
        if m.get("settings") != first.get("settings"):
            raise ValueError(f"the run of seed {s} has other settings than seed {seeds[0]}'s")
        if list(df.columns) != list(runs[0][0].columns):
            raise ValueError(f"the run of seed {s} has other columns than seed {seeds[0]}'s")
    frames = [
        df.assign(seed=s)[["seed", *df.columns]] for (df, _), s in zip(runs, seeds, strict=True)
    ]
    df = pd.concat(frames, ignore_index=True)
    meta = {k: v for k, v in first.items() if k not in (*PER_RUN, "provenance", "columns")}
    meta.update(
        control=control,
        device=", ".join(sorted({str(m.get("device")) for _, m in runs})),
        seeds=seeds,
        runs_by_seed={
            str(s): {k: m[k] for k in PER_RUN if k in m}
            for (_, m), s in zip(runs, seeds, strict=True)
        },
        columns={**SEED_COLUMN, **first["columns"]},
    )
    return df, meta
