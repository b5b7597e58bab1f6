"""Regime checks of Kobayashi, Akram, von Oswald 2024 (docs/papers/lowrank.md#regime-checks),
shared by the figures of :mod:`attnbias.claims.lowrank` and :mod:`.lowrank_table1`.

Each is a claim of kind ``regime`` whose threshold is fixed from the paper's mechanism before any
run was measured; a failed one voids its figure's paper claims (:func:`attnbias.claims.core.
void_causes`): the verdict would measure the stand-in's budget, not the paper.

- :func:`decay_acted`: weight decay has acted at every λ > 0 a claim compares.  AdamW's decoupled
  decay multiplies a weight by (1 − η_tλ) per update, so it leaves at most e^{−2λΣη_t} of the
  imbalance AᵀA − BᵀB, and of a direction of the product ABᵀ that the gradient does not sustain;
  the regime asks that to be at most :data:`DECAY_LEFT_MAX` (a tenth):
  λΣ_tη_t ≥ :data:`EXPOSURE_MIN` = ln(10)/2 ≈ 1.15.
- :func:`settled`: a rank read at the end has settled: it moved by at most :data:`SETTLE_MAX`
  (5 %, the tolerance of the rank claims' consecutive ratios) over the last tenth of training,
  counted in the decay's clock τ = Σ_t η_t (the time both the decay and the updates act for; the
  steps under a constant learning rate), so that an annealed learning rate does not freeze a rank
  before it has settled.
- the balance claims' ceiling (:data:`CEILING_MAX`, in :mod:`attnbias.claims.lowrank`): the
  proxies' median y/x at λ = 0 is below the level the project calls balanced (0.95), so the claimed
  growth has room.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis.lowrank import rank_traces
from .core import Claim, compare

PRODUCTS = (("kq", "W_KᵀW_Q"), ("pv", "PW_V"))
DECAY_LEFT_MAX = 0.1
EXPOSURE_MIN = math.log(1.0 / DECAY_LEFT_MAX) / 2.0
SETTLE_FRAC, SETTLE_MAX = 0.1, 0.05
CEILING_MAX = 0.95


def decay_acted(cid: str, where: str, exposures: dict) -> Claim:
    """Regime: min over the λ > 0 of ``exposures`` (λ → λΣ_tη_t) ≥ :data:`EXPOSURE_MIN`; no λ > 0,
    or one without its Σ_tη_t (NaN), fails."""
    pos = {float(lam): float(x) for lam, x in exposures.items() if lam > 0}
    vals = list(pos.values())
    value = min(vals) if vals and all(np.isfinite(vals)) else float("nan")
    each = ", ".join(f"{lam:g}: {x:.3g}" for lam, x in sorted(pos.items())) or "none"
    return compare(cid,
                   f"{where}: weight decay has acted at every λ > 0 compared: min over λ of "
                   f"λ·Σ_t η_t, so that e^{{−2λΣη}} ≤ {DECAY_LEFT_MAX:g} (λ → λΣη: {each})",
                   value, ">=", EXPOSURE_MIN, kind="regime")  # fmt: skip


def settled(cid: str, where: str, changes: dict) -> Claim:
    """Regime: the largest of ``changes`` (what → relative change of a rank over the last tenth of
    training, :func:`~attnbias.analysis.lowrank.settle_change`) ≤ :data:`SETTLE_MAX`; no rank, or a
    missing trace (NaN), fails."""
    vals = np.asarray(list(changes.values()), dtype=float)
    value = float(np.max(vals)) if vals.size and np.isfinite(vals).all() else float("nan")
    worst = (max(changes, key=lambda k: changes[k] if np.isfinite(changes[k]) else np.inf)
             if changes else "none")  # fmt: skip
    return compare(cid,
                   f"{where}: the ranks read at the end have settled: largest relative change "
                   f"|r(T) − r(t′)| / r(T) over the last tenth of training in the decay's clock "
                   f"τ = Σ_t η_t (t′ the last logged point with τ ≤ 0.9 τ(T)) of the "
                   f"{len(changes)} ranks the claims read (largest: {worst})", value, "<=",
                   SETTLE_MAX, kind="regime")  # fmt: skip


def run_exposures(runs: list[dict], lam_key: str, lams) -> dict:
    """λ → min over the runs at λ of λ·Σ_tη_t (their recorded ``lr_sum``; NaN if one lacks it or
    no run is at λ)."""
    out = {}
    for lam in lams:
        xs = [float(lam) * float(r["lr_sum"]) if r.get("lr_sum") is not None else float("nan")
              for r in runs if float(r[lam_key]) == float(lam)]  # fmt: skip
        out[float(lam)] = min(xs) if xs and all(np.isfinite(xs)) else float("nan")
    return out


def trace_changes(runs: list[dict], lam_key: str, lams, layers=None,
                  metrics=("eff_rank", "rank_1e2")) -> dict:
    """``"λ=… seed … <product> <measure>"`` → the relative change over the last tenth of training,
    in the decay's clock Σ_t η_t, of the rank the claims read (the mean over heads and ``layers``,
    all when None) from the runs' rank traces (:func:`~attnbias.analysis.lowrank.rank_traces`),
    for the runs at ``lams``; NaN for a run without a trace."""
    from ..analysis.lowrank import settle_change

    tr = rank_traces(runs, lam_key)
    if layers is not None:
        tr = tr[tr.layer.isin(layers)]
    want = {float(x) for x in lams}
    out = {}
    for r in runs:
        lam, seed = float(r[lam_key]), int(r["seed"])
        if lam not in want:
            continue
        t = tr[(tr.lam == lam) & (tr.seed == seed)]
        # the decay's clock Σ η_t where the trace has it (a trace recorded before: the count)
        clock = "lr_sum" if t.lr_sum.notna().all() else "count"
        for product, _ in PRODUCTS:
            g = t[t["product"] == product].groupby(clock)[list(metrics)].mean()
            for m in metrics:
                out[f"λ={lam:g} seed {seed} {product} {m}"] = (
                    settle_change(g.index, g[m], SETTLE_FRAC) if len(g) else float("nan")
                )
    return out


def runs_of(meta: dict, df: pd.DataFrame, lam_key: str, lam_col: str | None = None) -> list:
    """The runs of ``meta["runs"]`` whose (seed, λ) are rows of ``df`` (one seed's, or all)."""
    lam_col = lam_col or lam_key
    have = {(int(s), float(lam)) for s, lam in zip(df.seed, df[lam_col], strict=True)}
    return [r for r in meta.get("runs") or [] if (int(r["seed"]), float(r[lam_key])) in have]
