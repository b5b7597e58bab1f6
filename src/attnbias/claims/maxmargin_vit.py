"""Claim checks of Tarzanagh et al. 2023, Figs 6-7: a ViT's last-layer [CLS] attention sparsifies
(soft-sparsity ζ falls) while ‖W_qᵀW_k‖_F grows, evaluated on the plot-ready training table."""

from __future__ import annotations

from ..metrics import spearman
from .core import Claim, compare


def vit_claims(figure, df, meta, preset) -> list[Claim]:
    """Figs 6/7 (spec §3.6): paper thresholds in the paper preset, trend signs in the quick one."""
    paper = preset == "paper"
    if figure == "fig6":
        first, last = df.epoch.min(), df.epoch.max()
        peak = df.groupby(["epoch", "image"]).weight.max().groupby("epoch").mean()
        return [
            compare(
                "maps_concentrate",
                "mean peak attention weight of the drawn maps rises "
                f"(epoch {last} − epoch {first})",
                float(peak[last] - peak[first]),
                ">",
                0.0,
                kind="paper",
            ),
        ]
    ep, zeta, w = df.epoch.to_numpy(), df.zeta.to_numpy(), df.wnorm.to_numpy()
    out = [
        compare(
            "zeta_trend",
            "ζ falls over training: Spearman ρ(epoch, ζ)",
            spearman(ep, zeta),
            "<",
            -0.8 if paper else 0.0,
            kind="paper",
        ),
        compare(
            "wnorm_trend",
            "‖W_qᵀW_k‖_F grows: Spearman ρ(epoch, ‖W‖_F)",
            spearman(ep, w),
            ">",
            0.8 if paper else 0.0,
            kind="paper",
        ),
    ]
    if paper:
        out.append(
            compare(
                "zeta_halves", "ζ(last) / ζ(first)", zeta[-1] / zeta[0], "<=", 0.5, kind="paper"
            )
        )
        out.append(
            compare(
                "probe_acc",
                "test accuracy (sanity)",
                df.probe_acc.iloc[-1],
                ">=",
                0.5,
                kind="sanity",
            )
        )
    else:
        out.append(
            compare("zeta_falls", "ζ(last) − ζ(first)", zeta[-1] - zeta[0], "<", 0.0, kind="paper")
        )
        out.append(
            compare(
                "train_acc",
                "final training accuracy (the model learned)",
                df.train_acc.iloc[-1],
                ">=",
                0.9,
                kind="sanity",
            )
        )
    return out
