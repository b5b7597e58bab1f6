"""Gather step of the fastrates deep-learning figures (Figs 1, 4 and 7): one job per figure reads
every training run's curve table (:mod:`.finetune`, :mod:`.image`), chooses per optimiser the grid
value with the lowest seed-mean selection loss at the selection step (the figure's ``select_on``:
the mean train loss over training, or the validation loss), and writes the plot-ready table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.fastrates import DL_OPTIMIZERS
from ...io import gathered_control, load_data
from ...metrics.chance import LEARNED_MARGIN, majority_share

GATHER_COLUMNS = {
    "selected": (
        "true for the grid value chosen for this optimiser "
        "(lowest seed-mean selection loss at the selection step, the figure's select_on, among "
        "the values whose run learned on every seed)"
    ),
    "seed": "the run's training seed (classifier head or model initialisation, batches, dropout)",
}
# settings shared by every run of a figure, copied from its first run into the gathered meta
COMMON_KEYS = (
    "dataset", "stand_in", "label_names", "sizes", "data_info", "model", "parameters",
    "embedding_rows", "max_length", "batch_size", "steps", "log_every", "eval_every", "epochs",
    "steps_per_epoch", "augment", "x_unit", "device", "select_at", "layers", "pooling",
)  # fmt: skip


def run_seed(meta: dict) -> int:
    """The training seed of a run (its record's ``seed``; 0 for a run that records none)."""
    return int(meta.get("seed", 0))


def train_loss_area(df: pd.DataFrame, meta: dict) -> float:
    """A run's mean train loss over training up to its selection point: the area under its logged
    train-loss curve (trapezoid over the rows after step 0) divided by the span, the rows counted
    in steps, or in epochs for an image run (its ``select_at`` is an epoch).  NaN for a run that
    diverged (a non-finite loss) or logged fewer than two rows."""
    key = "epoch" if "epoch" in df.columns else "step"
    at = meta.get("select_at")
    d = df.dropna(subset=["train_loss"]).sort_values(key)
    d = d[(d[key] > 0) & ((d[key] <= at) if at is not None else True)]
    x, y = d[key].to_numpy(float), d["train_loss"].to_numpy(float)
    if len(x) < 2 or not np.isfinite(y).all():
        return float("nan")
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)) / (x[-1] - x[0]))


def select_on(meta: dict) -> str:
    """The selection loss of a run's figure: its settings' ``select_on`` (``"val_loss"`` for runs
    recorded before the setting existed)."""
    return (meta.get("settings") or {}).get("select_on") or "val_loss"


def select_runs(runs: list[tuple[pd.DataFrame, dict]]) -> dict:
    """Per optimiser: the grid value with the lowest selection loss at the selection step (the
    figure's ``select_on``: the mean train loss over training up to it, :func:`train_loss_area`,
    or the validation loss), averaged over the seeds (every seed then uses that value: one choice
    per optimiser, not per seed), among the values whose run **learned on every seed**.

    A value is eligible when, on every seed, its run's validation loss is finite and its validation
    accuracy beats the majority-class share by ``LEARNED_MARGIN`` (the validation-split
    counterpart of the sanity check `trained`, which asks it of the chosen runs on the test
    split): a step size at which one draw diverges or stays at chance is not a valid choice, however
    well the other draws do (their mean can hide it).  If no value is eligible, the choice falls
    back to the lowest seed-mean loss among the values finite on every seed, and `trained` then
    fails, as it should.  Runs that record no validation accuracy or no class counts are judged on
    the loss alone.

    Returns {optimizer: {"grid", "select_on", "score", "score_by_seed", "val_loss",
    "val_loss_by_seed", "val_acc_by_seed", "learned", "effective_lr", "chosen",
    "chosen_effective_lr", "at_edge"}}: ``score`` (the selection loss), ``val_loss`` and
    ``effective_lr`` are the seed means per grid value (SNGD's matched η and SPS's c depend on the
    seed's probe), ``val_*_by_seed`` ``{seed: [per grid value]}``, ``learned`` per grid value
    whether it learned on every seed; ``at_edge`` says whether the chosen value is the smallest or
    largest of a grid of two or more values (the grid is then extended by one factor-3 step in that
    direction: docs/papers/fastrates.md#learning-rate-grids-and-selection).
    """
    acc: dict = {}
    base = None
    criteria = {select_on(meta) for _, meta in runs}
    if len(criteria) > 1:
        raise ValueError(f"the runs of one figure were selected on different losses: {criteria}")
    criterion = criteria.pop() if criteria else "val_loss"

    def number(x) -> float:
        return float("nan") if x is None else float(x)

    for df, meta in runs:
        cell = acc.setdefault(meta["optimizer"], {}).setdefault(float(meta["grid_value"]), {})
        val = number(meta.get("val_loss_at_select"))
        cell[run_seed(meta)] = (
            val,
            float(meta["effective_lr"]),
            number(meta.get("val_acc_at_select")),
            train_loss_area(df, meta) if criterion == "train_loss" else val,
        )
        base = majority_share(meta.get("data_info")) if base is None else base
    out: dict = {}
    for o, cells in acc.items():
        grid = sorted(cells)
        seeds = sorted({s for c in cells.values() for s in c})
        missing = [(g, s) for g in grid for s in seeds if s not in cells[g]]
        if missing:
            raise ValueError(f"{o}: no run for (grid value, seed) {missing}")
        vl = np.array([[cells[g][s][0] for s in seeds] for g in grid], dtype=float)
        va = np.array([[cells[g][s][2] for s in seeds] for g in grid], dtype=float)
        sc = np.array([[cells[g][s][3] for s in seeds] for g in grid], dtype=float)
        finite = np.isfinite(vl).all(axis=1) & np.isfinite(sc).all(axis=1)
        # NaN accuracy (not recorded) never excludes; a diverged run's NaN loss does, above
        below = (va < base + LEARNED_MARGIN) if base is not None else np.zeros_like(va, bool)
        learned = finite & ~below.any(axis=1)
        mean = np.where(finite, sc.mean(axis=1), np.inf)
        eff = [float(np.mean([cells[g][s][1] for s in seeds])) for g in grid]
        best = int(np.argmin(np.where(learned, mean, np.inf) if learned.any() else mean))

        def listed(x):
            return [float(m) if np.isfinite(m) else float("nan") for m in x]

        out[o] = {
            "grid": grid,
            "select_on": criterion,
            "score": listed(mean),
            "score_by_seed": {str(s): sc[:, i].tolist() for i, s in enumerate(seeds)},
            "val_loss": listed(np.where(np.isfinite(vl).all(axis=1), vl.mean(axis=1), np.nan)),
            "val_loss_by_seed": {str(s): vl[:, i].tolist() for i, s in enumerate(seeds)},
            "val_acc_by_seed": {str(s): va[:, i].tolist() for i, s in enumerate(seeds)},
            "learned": learned.tolist(),
            "effective_lr": eff,
            "chosen": grid[best],
            "chosen_effective_lr": eff[best],
            "at_edge": bool(len(grid) > 1 and best in (0, len(grid) - 1)),
        }
    return out


def edge_side(runs: list[tuple[pd.DataFrame, dict]]) -> str | None:
    """Which way one optimiser's grid is widened (the rule `extend`): ``"down"`` / ``"up"`` when
    its seed-mean choice (:func:`select_runs`) is the smallest / largest of its three
    or more values, else None (docs/papers/fastrates.md#learning-rate-grids-and-selection)."""
    sel = select_runs(runs)
    if len(sel) != 1:
        raise ValueError(f"edge_side judges one optimiser's grid, got {sorted(sel)}")
    e = next(iter(sel.values()))
    if len(e["grid"]) < 3 or not e["at_edge"]:
        return None
    return "down" if e["chosen"] == e["grid"][0] else "up"


def gather_dl(
    figure: str, parts: list[str], preset: str, control: str = "none", extensions=()
) -> tuple[pd.DataFrame, dict]:
    """The plot-ready table of Figs 1, 4 and 7: every run's curves, flagged ``selected`` for the
    grid value chosen per optimiser (:func:`select_runs`); the meta records the grids, the
    selection and validation losses, the chosen values, each selected run's settings and the
    ``control`` (every run must have been trained under it).  ``extensions``: the records of the
    `extend` jobs (attnbias.runs.write_extension), whose runs are among ``parts``; each
    optimiser's selection records its grid's ``extension`` (``side`` widened, or None, and the
    ``value`` added)."""
    runs = [load_data(p) for p in parts]
    gathered_control(control, [m for _, m in runs])
    sel = select_runs(runs)
    for record in extensions:
        sel[record["group"]["opt"]]["extension"] = {
            k: record[k] for k in ("side", "value")
        }  # fmt: skip
    frames, by_seed = [], {}
    for df, meta in runs:
        o, seed = meta["optimizer"], run_seed(meta)
        chosen = np.isclose(float(meta["grid_value"]), sel[o]["chosen"])
        frames.append(df.assign(selected=bool(chosen), seed=seed))
        if chosen:
            by_seed.setdefault(str(seed), {})[o] = {
                k: v for k, v in meta.items() if k not in ("columns", "provenance", "settings")
            }
    seeds = sorted(by_seed, key=int)
    df = pd.concat(frames, ignore_index=True)
    order = {o: i for i, o in enumerate(DL_OPTIMIZERS)}
    df = df.sort_values(
        ["optimizer", "lr", "seed", "step"],
        key=lambda s: s.map(order) if s.name == "optimizer" else s,
        kind="stable",
    ).reset_index(drop=True)
    first = runs[0][1]
    columns = dict(first["columns"], **GATHER_COLUMNS)
    # what the runs share: their settings (recorded once per run) and what they imply
    common = {**first.get("settings", {}), **first}
    meta = {k: common[k] for k in COMMON_KEYS if k in common}
    meta.update(
        {
            "figure": figure,
            "preset": preset,
            "settings": first.get("settings"),
            "control": control,
            "selection": sel,
            "seeds": [int(x) for x in seeds],
            # the chosen runs of the first seed, and of every seed
            "runs": by_seed[seeds[0]],
            "runs_by_seed": by_seed,
            "optimizers": [o for o in DL_OPTIMIZERS if o in sel],
            "columns": columns,
            # where the runs' data and weights came from (hub ids or local directories)
            "sources": {
                k: sorted({str(m.get("settings", {}).get(k)) for _, m in runs})
                for k in ("source", "model")
            },
        }
    )
    what = {"train_loss": "mean train loss over training up to the selection step",
            "val_loss": "validation loss at the selection step"}[select_on(runs[0][1])]
    meta["selection_rule"] = (
        f"per optimiser, the grid value with the lowest {what}, "
        "averaged over the seeds (never the test set), among the values whose run learned on "
        f"every seed (finite validation loss, validation accuracy at least "
        f"{100 * LEARNED_MARGIN:g} points above the majority-class share); every seed uses that "
        "value; a grid whose "
        "choice is at an edge is widened once by one factor-3 step on that side (the rule extend)"
    )
    return df, meta
