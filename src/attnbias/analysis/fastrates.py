"""Analysis of the fastrates data shared by the claim checks and the plots: method names and
labels, and Table 1 (proposal), the rates fitted on the Fig 2 runs.

Claims (:mod:`attnbias.claims.fastrates`) and plots (:mod:`attnbias.plotting.fastrates`) import
these from here, never from :mod:`attnbias.experiments`, so that reading the plot-ready data does
not pull in (or depend on) the code that computes it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# update rules of the synthetic figures (and Fig 6), in plotting order, and their legend labels
METHODS = ("gd", "ngd", "polyak")
LABELS = {"gd": "GD", "ngd": "NGD", "polyak": "PS"}
# optimisers of the deep-learning figures (Figs 1, 4, 7), in plotting order, and their labels
DL_OPTIMIZERS = ("sgd", "sngd", "sps", "adamw")
DL_LABELS = {"sgd": "SGD", "sngd": "SNGD", "sps": "SPS", "adamw": "AdamW"}

RATE_COLUMNS = {
    "align_loglog": "slope of log10(1 − corr) against log10 t over t ∈ [100, 1000]",
    "sat_exp": "slope of log10(1 − s̄_opt) against t over t ∈ [10, 100] (exponential rate)",
    "sat_loglog": "slope of log10(1 − s̄_opt) against log10 t over t ∈ [10, 100] (polynomial rate)",
    "norm_rate": "slope of ‖W_t‖_F against t over t ∈ [100, 1000]",
    "loss_exp": "slope of log10(L − L*) against t over t ∈ [10, 100]",
}
RATE_TITLE = "Table 1 (proposal): rates fitted on the Fig 2 runs, mean ± sd over seeds."


def fit_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y against x (NaN with fewer than two finite points)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def rate_table(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1 (proposal): fitted rates per method (mean and sd over seeds) from the Fig 2 runs.

    One row per method with ``method``, ``lr``, ``n_seeds`` and, for each key of
    :data:`RATE_COLUMNS`, its mean over (seed, init) runs and ``<key>_sd`` (population sd)."""
    rows = []
    for method in METHODS:
        per_seed = []
        for _, g in df[df.method == method].groupby(["seed", "init"]):
            g = g.sort_values("t")
            t = g.t.to_numpy(dtype=float)
            a = (t >= 100) & (t <= 1000)
            b = (t >= 10) & (t <= 100)
            corr = g.log10_one_minus_corr.to_numpy()
            sat = g.log10_one_minus_sopt.to_numpy()
            per_seed.append(
                {
                    "align_loglog": fit_slope(np.log10(t[a]), corr[a]),
                    "sat_exp": fit_slope(t[b], sat[b]),
                    "sat_loglog": fit_slope(np.log10(t[b]), sat[b]),
                    "norm_rate": fit_slope(t[a], g.norm_W.to_numpy()[a]),
                    "loss_exp": fit_slope(t[b], g.log10_excess.to_numpy()[b]),
                }
            )
        ps = pd.DataFrame(per_seed)
        lr = float(df[df.method == method].lr.iloc[0])
        row = {"method": method, "lr": lr, "n_seeds": len(ps)}
        for k in RATE_COLUMNS:
            row[k] = float(ps[k].mean())
            row[f"{k}_sd"] = float(ps[k].std(ddof=0))
        rows.append(row)
    return pd.DataFrame(rows)


def rate_cells(tab: pd.DataFrame) -> pd.DataFrame:
    """The cells of the Markdown Table 1: method label, step size, and "mean ± sd" per rate."""
    rows = []
    for _, r in tab.iterrows():
        row = {"method": LABELS[r.method], "step": f"{r.lr:g}"}
        row.update({k: f"{r[k]:.4g} ± {r[k + '_sd']:.2g}" for k in RATE_COLUMNS})
        rows.append(row)
    return pd.DataFrame(rows, columns=["method", "step", *RATE_COLUMNS])


def write_rate_table(df: pd.DataFrame, csv_path, md_path) -> pd.DataFrame:
    """Write Table 1 (proposal) from the Fig 2 data ``df`` as CSV (the numbers) and Markdown
    (mean ± sd over seeds, with the column definitions) through :func:`attnbias.io.write_table`;
    returns the numeric table."""
    from ..io import write_table

    tab = rate_table(df)
    notes = ["Columns:", *(f"- `{k}`: {v}" for k, v in RATE_COLUMNS.items())]
    write_table(rate_cells(tab), tab, csv_path, md_path, RATE_TITLE, notes)
    return tab
