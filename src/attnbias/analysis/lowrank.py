"""Analysis of the lowrank plot-ready tables, shared by :mod:`attnbias.claims.lowrank`,
:mod:`attnbias.plotting.lowrank` and the Table 1 files (Kobayashi, Akram, von Oswald 2024).

Convention (docs/papers/lowrank.md#conventions): weight decay (λ/2)(‖A‖² + ‖B‖²) ≡ λ‖ABᵀ‖_* at
balance; AdamW's decoupled θ ← θ − lr·λ·θ is the same penalty.

* :func:`log_slope`: the exponential decay rate of a positive trace (Fig 1 imbalance).
* Fig 2 (recall tables, one row per (λ, seed, step, layer, head, product)): :func:`final_rows`,
  :func:`recall_summary`, :func:`mean_trace`, :func:`early_window`.
* Fig 3 / App. Fig. C (LM tables): :func:`lm_rank_summary`.
* Table 1: :func:`table1_summary` (perplexity per (λ_SA, λ_MLP) cell over seeds) and
  :func:`table1` (the same as the arguments of :func:`attnbias.io.write_table`).
* Regime checks (docs/papers/lowrank.md#regime-checks): :func:`settle_change` (how much a rank
  read at the end still moved over the last tenth of training) and :func:`rank_traces` (the rank
  traces the LM and ViT runs record).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def log_slope(t, y, t_min: float, t_max: float, floor: float = 0.0) -> float:
    """−slope of a least-squares line through log y against t on [t_min, t_max] with y > floor."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    sel = (t >= t_min) & (t <= t_max) & (y > floor) & np.isfinite(y)
    if sel.sum() < 2:
        return float("nan")
    return float(-np.polyfit(t[sel], np.log(y[sel]), 1)[0])


# ---------------------------------------------------------------------------------------------
# Fig 2: associative recall


def final_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows logged at the last step of each (λ, seed) run."""
    return df[df.step == df.groupby(["lam", "seed"]).step.transform("max")]


def recall_summary(df: pd.DataFrame, solved_acc: float) -> pd.DataFrame:
    """Per (λ, product): final mean metrics over heads, layers and seeds, plus accuracy and
    solved."""
    last = final_rows(df)
    g = last.groupby(["lam", "product"])
    cols = ["eff_rank", "rank_1e2", "rank_1e3", "gap", "imbalance", "ratio", "accuracy"]
    out = g[cols].mean().reset_index()
    out["solved"] = out.accuracy >= solved_acc
    return out


def mean_trace(df: pd.DataFrame, product: str, column: str) -> pd.DataFrame:
    """Mean of ``column`` over heads, layers and seeds at every logged step, one column per λ."""
    d = df[df["product"] == product]
    return d.groupby(["step", "lam"])[column].mean().unstack("lam")


def early_window(lr: float, lam: float, steps: int, cap: int = 3000) -> float:
    """The early phase of the imbalance fit: the first min(1/(ηλ), cap, steps) steps."""
    return float(min(1.0 / (lr * lam) if lam > 0 else math.inf, cap, steps))


# ---------------------------------------------------------------------------------------------
# Fig 3 (LM), App. Fig. C and Table 1


def lm_rank_summary(df: pd.DataFrame, layers: list[int] | None = None, by: str = "lam_sa"):
    """Mean rank metrics over heads (and the given layers; all when None) and seeds, per
    (λ, product)."""
    d = df if layers is None else df[df.layer.isin(layers)]
    cols = ["eff_rank", "rank_1e2", "rank_1e3", "ratio"]
    return d.groupby([by, "product"])[cols].mean().reset_index()


def table1_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (λ_SA, λ_MLP) cell: seeds, mean, standard deviation and standard error of the validation
    perplexity over seeds (one value per run)."""
    runs = df.groupby(["lam_sa", "lam_mlp", "seed"]).val_ppl.first().reset_index()
    g = runs.groupby(["lam_sa", "lam_mlp"]).val_ppl
    out = g.agg(n="count", mean="mean", std="std").reset_index()
    out["se"] = out["std"] / np.sqrt(out["n"])
    return out


def table1(df: pd.DataFrame, meta: dict) -> dict:
    """Table 1 as the keyword arguments of :func:`attnbias.io.write_table` (all but the paths):
    ``csv_table`` = :func:`table1_summary`; ``cells`` = a λ_SA × λ_MLP grid of "mean ± std (n)"
    strings, the best (lowest mean) cell in bold; ``title`` and ``notes``."""
    t = table1_summary(df)
    lam_sa = sorted(t.lam_sa.unique())
    lam_mlp = sorted(t.lam_mlp.unique())
    cell = {(r.lam_sa, r.lam_mlp): r for r in t.itertuples()}
    best = t.loc[t["mean"].idxmin()]
    rows = []
    for a in lam_sa:
        row = {"λ_SA \\ λ_MLP": f"{a:g}"}
        for m in lam_mlp:
            r = cell.get((a, m))
            if r is None:
                row[f"{m:g}"] = "—"
                continue
            sd = f" ± {r.std:.3f}" if np.isfinite(r.std) else ""
            mark = "**" if (a, m) == (best.lam_sa, best.lam_mlp) else ""
            row[f"{m:g}"] = f"{mark}{r.mean:.3f}{sd}{mark} ({int(r.n)})"
        rows.append(row)
    stand_in = meta.get("corpus", {}).get("stand_in")
    title = (
        f"Table 1: validation perplexity over λ_SA × λ_MLP ({meta.get('preset')} preset"
        + (f"; stand-in data: {stand_in}" if stand_in else "")
        + ")"
    )
    notes = [
        "Mean ± standard deviation over seeds (n seeds per cell in brackets).  Weight decay is "
        "AdamW's decoupled θ ← θ − lr·λ·θ, i.e. the penalty (λ/2)‖θ‖² (≡ λ‖ABᵀ‖_* at balance).",
        "",
        f"Best cell (bold): λ_SA = {best.lam_sa:g}, λ_MLP = {best.lam_mlp:g}, "
        f"perplexity {best['mean']:.3f}.",
    ]
    base = ngram_baseline_range(meta)
    if base:
        notes += [
            "",
            "n-gram baselines of the same validation tokens (add-one smoothed counts of the "
            "training tokens), over the runs: " + base + ".",
        ]
    return {"cells": pd.DataFrame(rows), "csv_table": t, "title": title, "notes": notes}


def ngram_baseline_range(meta: dict) -> str:
    """The unigram and bigram perplexities recorded by the LM runs of a gathered table (``meta``
    from :func:`attnbias.experiments.lowrank.lm.gather_lm`), as "unigram a–b, bigram c–d"; empty
    when no run recorded them."""
    parts = []
    for key, name in (("unigram_ppl", "unigram"), ("bigram_ppl", "bigram")):
        v = [float(r[key]) for r in meta.get("runs") or [] if r.get(key)]
        if v:
            parts.append(f"{name} {min(v):.3f}–{max(v):.3f}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Regime checks


def settle_change(counts, values, frac: float = 0.1) -> float:
    """|v(T) − v(t')| / |v(T)|: how much a trace logged at ``counts`` (steps, epochs, or the decay's
    clock Σ η_t) still moved over the last ``frac`` of training, T the last count and t' the last
    logged count at or before (1 − frac)·T (a window of at least ``frac``·T).  NaN when nothing was
    logged that early."""
    c, v = np.asarray(counts, dtype=float), np.asarray(values, dtype=float)
    order = np.argsort(c, kind="stable")
    c, v = c[order], v[order]
    if len(c) < 2 or c[-1] <= 0 or v[-1] == 0:
        return float("nan")
    early = c <= (1.0 - frac) * c[-1]
    if not early.any():
        return float("nan")
    return float(abs(v[-1] - v[early][-1]) / abs(v[-1]))


def rank_traces(runs: list[dict], lam_key: str) -> pd.DataFrame:
    """The rank traces of a gathered LM or ViT table's runs (``meta["runs"]``, each with its
    ``rank_trace``: per logged row, layer and product, the mean over heads of the effective rank
    and rank@10⁻²), as one table: columns ``lam`` (the run's ``lam_key``), ``seed``, ``count``
    (the row's step or epoch), ``lr_sum`` (Σ η_t by then: the decay's clock; NaN in a trace
    recorded without it), ``layer``, ``product``, ``eff_rank``, ``rank_1e2``.  A run without a
    trace has no rows."""
    rows = [
        {"lam": float(r[lam_key]), "seed": int(r["seed"]), "lr_sum": float("nan"), **t}
        for r in runs for t in (r.get("rank_trace") or [])
    ]  # fmt: skip
    cols = ["lam", "seed", "count", "lr_sum", "layer", "product", "eff_rank", "rank_1e2"]
    return pd.DataFrame(rows, columns=cols)
