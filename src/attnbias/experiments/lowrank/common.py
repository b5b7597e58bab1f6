"""What every lowrank training job records: per-head rank and balance metrics of a trained
attention model (docs/papers/lowrank.md#rank-and-balance-measures;
:func:`attnbias.metrics.rank.model_head_metrics`).

For head h of layer l and each product (``kq`` = W_K^{hT}W_Q^h, ``pv`` = P^h W_V^h, written
A Bᵀ): effective rank, numerical ranks at relative thresholds 10⁻² and 10⁻³, ‖ABᵀ‖_*, the
Frobenius bound ½(‖A‖² + ‖B‖²) ≥ ‖ABᵀ‖_*, their gap and ratio, the imbalance ‖AᵀA − BᵀB‖_F and
(optionally) the singular values.
"""

from __future__ import annotations

import functools

import numpy as np

from ...io import check_control
from ...metrics import rank as rk

HEAD_COLUMNS = {
    "layer": "attention layer, counted from 1",
    "head": "head index within the layer",
    "product": "kq = W_K^{hT}W_Q^h, pv = P^h W_V^h",
    "eff_rank": "effective rank of the product",
    "rank_1e2": "#{σ_i > 10⁻²σ₁}",
    "rank_1e3": "#{σ_i > 10⁻³σ₁}",
    "nuclear": "nuclear norm of the product",
    "frob_bound": "½(‖A‖_F² + ‖B‖_F²) of its two factors",
    "gap": "½(‖A‖² + ‖B‖²) − ‖ABᵀ‖_*",
    "imbalance": "‖AᵀA − BᵀB‖_F (kq: W_KW_Kᵀ − W_QW_Qᵀ; pv: PᵀP − W_VW_Vᵀ)",
    "ratio": "‖ABᵀ‖_* / (½‖A‖² + ½‖B‖²)",
}


def control_lambda(lam: float, control: str) -> float:
    """The swept weight decay a run actually uses: ``lam``, or 0 under the negative control
    ``control="null"`` (``--config control=null``: the paper's mechanism, weight decay on the
    attention matrices, removed; the run keeps its label ``lam``)."""
    return 0.0 if check_control(control) == "null" else float(lam)


def decay_control_trains(run: dict, key: str) -> dict:
    """The uncontrolled run that a weight-decay sweep's run under the negative control trains,
    bit for bit (:func:`control_lambda`): the same settings with the swept decay ``run[key]`` at
    0 and no control.  Every λ of a sweep under the control is thus the sweep's own λ = 0 run
    (same seed), which the workflow trains once, in the default run's folder, and relabels
    (:func:`decay_as_control_run`) instead of training again.

    Parameters
    ----------
    run : dict
        A training run's keyword settings (``settings``, the point, e.g. ``lam`` and ``seed``,
        and ``control`` when not ``"none"``).
    key : str
        The point key of the swept decay (``"lam"``, ``"sa"``, ``"attn"``).

    Returns
    -------
    dict
        The settings of the uncontrolled run it trains: ``run`` with ``key`` at 0.0 under
        ``control="null"``, itself (without ``control``) otherwise.
    """
    out = {k: v for k, v in run.items() if k != "control"}
    if check_control(run.get("control", "none")) == "null":
        out[key] = 0.0
    return out


def decay_as_control_run(tables: dict, run: dict, key: str, column: str) -> dict:
    """A finished run's tables (those of ``decay_control_trains(run, key)``) as the run ``run``
    writes them itself under the control: its label, the swept decay ``run[key]``, in the table
    column and the metadata entry ``column`` (the decay used, ``<column>_used``, stays 0), and
    its ``control``.  Training the run instead gives the same tables but for its timings.

    ``tables``: ``{name: (df, meta)}``, as a training function returns them (not modified).
    """
    used, expected = f"{column}_used", control_lambda(run[key], run.get("control", "none"))
    out = {}
    for name, (df, meta) in tables.items():
        if meta.get(used) != expected:
            raise ValueError(
                f"the run to relabel trained with {used}={meta.get(used)!r}, not the {expected} "
                f"of {run}"
            )
        df = df.copy()
        df[column] = float(run[key])
        out[name] = (df, dict(meta, **{column: run[key], "control": run["control"]}))
    return out


def decay_sharing(key: str, column: str) -> tuple:
    """A weight-decay sweep's pair for the figure table's ``control_shares``:
    ``control_trains(run)`` (:func:`decay_control_trains`) and ``as_control_run(tables, run)``
    (:func:`decay_as_control_run`) for the point key ``key`` of its swept decay and the table
    column ``column`` that labels it."""
    return (
        functools.partial(decay_control_trains, key=key),
        functools.partial(decay_as_control_run, key=key, column=column),
    )


def head_rows(model, step: int, with_spectra: bool) -> list[dict]:
    """One row per (layer, head, product) of ``model`` at optimiser step ``step``: the metrics of
    :data:`HEAD_COLUMNS` plus the singular values ``s1 … s_{d_h}`` (NaN unless ``with_spectra``)."""
    mets = rk.model_head_metrics(model)
    rows = []
    for product, m in mets.items():
        n_layers, n_heads = m["eff_rank"].shape
        for li in range(n_layers):
            for h in range(n_heads):
                row = {
                    "step": step,
                    "layer": li + 1,
                    "head": h,
                    "product": product,
                    "eff_rank": m["eff_rank"][li, h],
                    "rank_1e2": m["rank@0.01"][li, h],
                    "rank_1e3": m["rank@0.001"][li, h],
                    "nuclear": m["nuclear"][li, h],
                    "frob_bound": m["frob_bound"][li, h],
                    "gap": m["gap"][li, h],
                    "imbalance": m["imbalance"][li, h],
                    "ratio": m["ratio"][li, h],
                }
                s = m["spectrum"][li, h]
                for i, si in enumerate(s):
                    row[f"s{i + 1}"] = si if with_spectra else np.nan
                rows.append(row)
    return rows


def rank_means(model) -> list[dict]:
    """The rank trace of one logged row: per (layer, product), the mean over heads of the effective
    rank and of rank@10⁻² (:data:`HEAD_COLUMNS`), for the check that a rank read at the end has
    settled (docs/papers/lowrank.md#regime-checks).  One entry per layer and product."""
    mets = rk.model_head_metrics(model)
    out = []
    for product, m in mets.items():
        for li in range(m["eff_rank"].shape[0]):
            out.append({
                "layer": li + 1,
                "product": product,
                "eff_rank": float(np.mean(m["eff_rank"][li])),
                "rank_1e2": float(np.mean(m["rank@0.01"][li])),
            })  # fmt: skip
    return out


def rank_trace(history: list[dict], cfg, n: int | None = None) -> list[dict]:
    """The rank trace of a run from its engine history (rows whose ``ranks`` are
    :func:`rank_means`): one entry per (row, layer, product) with the row's ``count`` (its step or
    epoch, the history's key) and ``lr_sum``, Σ η_t over the updates done by then, the clock of
    the decoupled decay in which the regime checks read "the last tenth of training"
    (docs/papers/lowrank.md#regime-checks).  ``cfg``: the run's engine settings; ``n``: the
    training set's size for a run counted in epochs over static data."""
    from ...train.rows import RowPlan

    plan = RowPlan.of(cfg, n)
    clock = np.concatenate([[0.0], np.cumsum([cfg.lr_factor(t, plan.total)
                                              for t in range(plan.total)])]) * cfg.lr
    out = []
    for h in history:
        if "ranks" not in h:
            continue
        count = int(h[plan.unit])
        done = min(count if plan.unit == "step" else count * plan.per, plan.total)
        out += [{"count": count, "lr_sum": float(clock[done]), **r} for r in h["ranks"]]
    return out


def lr_sum(cfg, n: int | None = None) -> float:
    """Σ_t η_t over the updates of a run of the engine (its schedule's learning rates): the time
    the decoupled weight decay acts for, e^{−λ Σ η_t} ≥ Π (1 − η_t λ) being what it leaves of a
    weight the gradient does not sustain (docs/papers/lowrank.md#regime-checks).  ``n``: the
    training set's size for a run counted in epochs over static data."""
    from ...train.rows import RowPlan

    total = RowPlan.of(cfg, n).total
    return float(cfg.lr * sum(cfg.lr_factor(t, total) for t in range(total)))
