"""Claim checks of Tarzanagh et al. 2023, Figs 9–10: the 1000-trial over-parameterisation study
(docs/papers/maxmargin.md#maxmargin_fig9a), on the plot-ready table of the ``fig9`` group.
Re-exported by :mod:`attnbias.claims.maxmargin`.  Every claim is ``paper``.
"""

from __future__ import annotations

import numpy as np

from ..metrics import spearman
from .core import Claim, compare


def _fractions(df):
    g = df.groupby("d")
    return (
        g.apply(lambda x: (~x.saturated).mean(), include_groups=False),
        g.apply(lambda x: x.lmm.mean(), include_groups=False),
        g.apply(lambda x: x.gmm.mean(), include_groups=False),
        g.apply(lambda x: (x.saturated & (x.gamma_gap < 0)).mean(), include_groups=False),
    )


def fig9a(fig9) -> list[Claim]:
    """Fig 9a: with d, fewer trials stay unsaturated and more converge to the GMM."""
    df, _ = fig9
    nonsat, lmm, gmm, _ = _fractions(df)
    ds = np.asarray(nonsat.index)
    return [
        compare(
            "nonsat_trend",
            "non-saturated fraction falls with d: Spearman ρ(d, fraction)",
            spearman(ds, nonsat.to_numpy()),
            "<",
            0.0,
            kind="paper",
        ),
        compare(
            "nonsat_small_d",
            f"non-saturated fraction at d = {ds[0]}",
            nonsat.iloc[0],
            ">",
            0.5,
            kind="paper",
        ),
        compare(
            "lmm_large_d", f"LMM fraction at d = {ds[-1]}", lmm.iloc[-1], ">=", 0.95, kind="paper"
        ),
        compare(
            "gmm_trend",
            "GMM fraction rises with d: Spearman ρ(d, fraction)",
            spearman(ds, gmm.to_numpy()),
            ">",
            0.0,
            kind="paper",
        ),
    ]


def fig9b(fig9) -> list[Claim]:
    """Fig 9b: saturated trials with γ_gap < 0 are rare; the solved ones align with p^mm."""
    df, _ = fig9
    _, _, _, neg = _fractions(df)
    big = neg[neg.index >= 6]
    return [
        compare(
            "neg_gap_rare",
            "max over d ≥ 6 of P(saturated and γ_gap < 0)",
            float(big.max()) if len(big) else np.nan,
            "<",
            0.01,
            kind="paper",
        ),
        compare(
            "mean_corr",
            "mean cos(p, p^mm) over saturated, solved trials",
            float(df["corr"].mean()),
            ">=",
            0.99,
            kind="paper",
        ),
    ]


def fig10(fig9) -> list[Claim]:
    """Fig 10: the pooled (d ≥ 5) CDF of γ_gap puts almost all mass in (0, 2]."""
    df, _ = fig9
    sat = df[df.saturated & (df.d >= 5) & np.isfinite(df.gamma_gap)]
    return [
        compare(
            "cdf_at_0",
            "pooled (d ≥ 5) CDF of γ_gap just below 0",
            float((sat.gamma_gap < 0).mean()) if len(sat) else np.nan,
            "<",
            0.01,
            kind="paper",
        ),
        compare(
            "mass_positive",
            "fraction of pooled γ_gap in (0, 2]",
            float(((sat.gamma_gap > 0) & (sat.gamma_gap <= 2)).mean()),
            ">",
            0.9,
            kind="paper",
        ),
    ]
