"""The robustness picture of a paper: its claims × seeds, each cell coloured by the verdict
(passed, failed, inconclusive, void: :func:`attnbias.claims.robustness.with_verdicts`) and shaded
by the margin to the threshold (:func:`attnbias.claims.robustness.margin`), and its caption.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb

from ..io import natural_key
from .style import new_figure, suptitle

# rows by claim kind (the order of attnbias.claims.core.KINDS)
_KIND_ORDER = ("paper", "control", "regime", "sanity", "identity")

_PASS, _FAIL, _VOID = to_rgb("tab:green"), to_rgb("tab:red"), to_rgb("0.55")
_UNRESOLVED = to_rgb("#e3b341")  # inconclusive: amber


def _cell(verdict: str, margin: float) -> tuple:
    """The colour of a cell: green (passed) or red (failed), lighter the closer the value is to
    its threshold (|margin| → 0), full colour at |margin| ≥ 1, a claim without a margin at 60 %;
    grey where the claim is void (its figure's run failed a sanity check on that seed), amber
    where it is inconclusive (its own seeds did not resolve it)."""
    if verdict == "void":
        return _VOID
    if verdict == "inconclusive":
        return _UNRESOLVED
    strength = 0.6 if not math.isfinite(margin) else 0.15 + 0.85 * min(abs(margin), 1.0)
    base = np.array(_PASS if verdict == "passed" else _FAIL)
    return tuple(1.0 - strength * (1.0 - base))


def robustness_grid(seeds: pd.DataFrame, paper: str, stand_in: str | None = None):
    """Claims × seeds of ``paper`` (the claims of the figures the seed redraws; paper claims,
    then sanity checks, figures in reading order), coloured by passed (green) / failed (red) /
    inconclusive (amber) / void (grey), shaded by the margin to the threshold; the right column
    says how many draws each claim passes.

    ``seeds``: the concatenated seed tables with each claim's verdict
    (:func:`attnbias.claims.robustness.with_verdicts`)."""
    d = seeds[(seeds.paper == paper) & seeds.redrawn & (seeds.kind != "identity")]
    seed_list = sorted(int(s) for s in d["seed"].unique())
    rows = (
        d.assign(_k=d["kind"].map({k: i for i, k in enumerate(_KIND_ORDER)}),
                 _f=d["figure"].map(natural_key))
        .sort_values(["_k", "_f", "claim"], kind="stable")
        .drop_duplicates(["figure", "claim"])
    )
    n = max(len(rows), 1)
    fig, ax = new_figure(width=3.2 + 0.35 * len(seed_list), height=0.9 + 0.16 * n)
    img = np.ones((n, max(len(seed_list), 1), 3))
    labels, agree = [], []
    for i, r in enumerate(rows.itertuples()):
        g = d[(d.figure == r.figure) & (d.claim == r.claim)].set_index("seed")
        for j, s in enumerate(seed_list):
            if s in g.index:
                img[i, j] = _cell(str(g.at[s, "verdict"]), float(g.at[s, "margin"]))
        labels.append(f"{r.figure} {r.claim}" + (f" [{r.kind}]" if r.kind != "paper" else ""))
        agree.append(f"{int((g['verdict'] == 'passed').sum())}/{len(g)}")
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(seed_list)), [str(s) for s in seed_list])
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_xlabel("seed shift (0 = the default run)")
    ax.grid(False)
    twin = ax.secondary_yaxis("right")
    twin.set_yticks(range(len(agree)), agree, fontsize=6)
    title = (f"{paper}: claims × seed shifts (green pass, red fail, amber inconclusive, grey "
             "void; pale = near the threshold)")  # fmt: skip
    title = title if not stand_in else f"{title}\n[{stand_in}]"
    suptitle(fig, title, fontsize=7)  # the figure's width: the claim labels push the axes right
    if not len(rows):
        ax.text(0.5, 0.5, "no figure of this paper is redrawn by the seed", ha="center",
                va="center", transform=ax.transAxes)  # fmt: skip
    return fig


def robustness_caption(table: pd.DataFrame, paper: str, seeds: list[int]) -> str:
    """The caption of a paper's robustness picture: what is drawn, the paper's count of claims
    holding on every seed, each seed-fragile claim with the seeds it fails on (so a comparison
    decided by noise says how many seeds agree), and the figures measured once."""
    t = table[table.paper == paper]
    p = t[t.kind == "paper"]
    hold = p.status.isin(["holds", "once-holds"]).sum()
    fragile = t[t.status.isin(["fragile", "rate-holds", "rate-fails"])]
    void = t[t["void"] > 0]
    once = sorted(set(t.loc[t.status.str.startswith("once"), "figure"]), key=natural_key)
    lines = [
        f"Every claim of the {paper} figures that the seed shift redraws, measured on seeds "
        f"{', '.join(map(str, seeds))} (0 = the default run; N = ``--config seed=N``, every "
        "random seed of the figure shifted by N).  A cell is green where the claim passes and red "
        "where it fails, paler the closer its value is to the threshold, amber where its own "
        "seeds did not resolve it (inconclusive), and grey where it is void (a sanity check of its "
        "figure failed on that draw: neither a pass nor a fail); the right column counts the "
        "draws it passes.",
        "",
        f"Paper claims holding on every draw: {hold}/{len(p)}.  Pooled over every seed of every "
        f"valid draw (the same sign test as within one draw): "
        + ", ".join(f"{(p.pooled == v).sum()} {v}" for v in ("passed", "failed", "inconclusive",
                                                            "void")) + ".",
    ]
    if len(fragile):
        lines += ["", "Seed-fragile:", ""]
        for r in fragile.itertuples():
            exam = getattr(r, "examination", "")
            lines.append(
                f"- {r.figure} ``{r.claim}`` ({r.kind}): {r.verdicts}; pooled {r.pooled} "
                f"({r.pooled_seeds})" + (f"; examined {exam}" if exam else "")
            )
    if len(void):
        lines += ["", "Void on some seed (a sanity check of the figure failed there):", ""]
        lines += [
            f"- {r.figure} ``{r.claim}``: void on seed {r.void_on}; passes on {r.seeds_passed}"
            for r in void.itertuples()
        ]
    if once:
        lines += ["", f"Measured once (not redrawn by the seed): {', '.join(once)}."]
    return "\n".join(lines) + "\n"
