"""Gather step of the fastrates deep-learning figures (Figs 1, 4 and 7): one job per figure reads
every training run's curve table (:mod:`.finetune`, :mod:`.image`), chooses per optimiser the grid
value with the lowest *validation* loss at the selection step, and writes the plot-ready table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.fastrates import DL_OPTIMIZERS
from ...io import gathered_control, load_data

GATHER_COLUMNS = {
    "selected": (
        "true for the grid value chosen for this optimiser "
        "(lowest validation loss at the selection step)"
    )
}
# settings shared by every run of a figure, copied from its first run into the gathered meta
COMMON_KEYS = (
    "dataset", "stand_in", "label_names", "sizes", "data_info", "model", "parameters",
    "max_length", "batch_size", "steps", "log_every", "eval_every", "epochs", "steps_per_epoch",
    "augment", "x_unit", "device", "select_at", "layers", "pooling",
)  # fmt: skip


def select_runs(runs: list[tuple[pd.DataFrame, dict]]) -> dict:
    """Per optimiser: the grid value with the lowest validation loss at the selection step.

    Returns {optimizer: {"grid", "val_loss", "chosen", "effective_lr", "at_edge"}}; ``at_edge`` says
    whether the chosen value is the smallest or largest of a grid of two or more values (the grid
    is then extended by one factor-3 step in that direction:
    docs/papers/fastrates.md#learning-rate-grids-and-selection).
    """
    out: dict = {}
    for _, meta in runs:
        o = meta["optimizer"]
        e = out.setdefault(o, {"grid": [], "val_loss": [], "effective_lr": []})
        e["grid"].append(float(meta["grid_value"]))
        v = meta.get("val_loss_at_select")
        e["val_loss"].append(float("nan") if v is None else float(v))
        e["effective_lr"].append(float(meta["effective_lr"]))
    for e in out.values():
        order = np.argsort(e["grid"])
        for k in ("grid", "val_loss", "effective_lr"):
            e[k] = [e[k][i] for i in order]
        vl = np.asarray(e["val_loss"], dtype=float)
        vl = np.where(np.isfinite(vl), vl, np.inf)  # a diverged run is never chosen
        best = int(np.argmin(vl))
        e["chosen"] = e["grid"][best]
        e["chosen_effective_lr"] = e["effective_lr"][best]
        e["at_edge"] = bool(len(e["grid"]) > 1 and best in (0, len(e["grid"]) - 1))
    return out


def gather_dl(
    figure: str, parts: list[str], preset: str, control: str = "none"
) -> tuple[pd.DataFrame, dict]:
    """The plot-ready table of Figs 1, 4 and 7: every run's curves, flagged ``selected`` for the
    grid value chosen per optimiser on the validation split; the meta records the grids, the
    validation losses, the chosen values, each selected run's settings and the ``control`` (every
    run must have been trained under it)."""
    runs = [load_data(p) for p in parts]
    gathered_control(control, [m for _, m in runs])
    sel = select_runs(runs)
    frames, per_run = [], {}
    for df, meta in runs:
        o = meta["optimizer"]
        chosen = np.isclose(float(meta["grid_value"]), sel[o]["chosen"])
        frames.append(df.assign(selected=bool(chosen)))
        if chosen:
            per_run[o] = {
                k: v for k, v in meta.items() if k not in ("columns", "provenance", "settings")
            }
    df = pd.concat(frames, ignore_index=True)
    order = {o: i for i, o in enumerate(DL_OPTIMIZERS)}
    df = df.sort_values(
        ["optimizer", "lr", "step"],
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
            "runs": per_run,
            "optimizers": [o for o in DL_OPTIMIZERS if o in sel],
            "columns": columns,
            # where the runs' data and weights came from (hub ids or local directories)
            "sources": {
                k: sorted({str(m.get("settings", {}).get(k)) for _, m in runs})
                for k in ("source", "model")
            },
        }
    )
    meta["selection_rule"] = (
        "per optimiser, the grid value with the lowest validation loss at the selection step "
        "(never the test set)"
    )
    return df, meta
