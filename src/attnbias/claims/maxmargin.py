"""Claim checks of Tarzanagh et al. 2023 (methods page docs/papers/maxmargin.md), on the plot-ready
data.

Kinds (see :mod:`attnbias.claims.core`): convergence, selection and rate statements are ``paper``;
the reference SVM directions matching their closed forms (the construction is the intended one)
and the ViT's accuracy are ``sanity``.  Identities moved to unit tests
(``tests/unit/test_claim_identities.py``): NGD's ‖p(t)‖ ≤ ηt (triangle inequality, Fig 4b) and
p_y ≡ 0 at C = 1 (mirror symmetry, Fig 5).

One public function per figure, named after it (``fig1a``, ..., ``fig10``), found by name by the
claim rule: its argument is named after the data group it reads (``fig1`` for
``results/data/maxmargin/fig1.csv``), a ``(DataFrame, meta)`` pair, and it returns the figure's
list of :class:`~attnbias.claims.core.Claim`.
"""

from __future__ import annotations

import numpy as np

from ..io import arr
from ..metrics import cosine
from .core import Claim, compare, holds, within
from .maxmargin_fig9 import fig9a, fig9b, fig10
from .maxmargin_vit import fig6, fig7

__all__ = [  # one function per figure (Figs 6–7 in maxmargin_vit, Figs 9–10 in maxmargin_fig9)
    "fig1a", "fig1b", "fig1c", "fig2", "fig3a", "fig3b", "fig3c", "fig4a", "fig4b", "fig5",
    "fig6", "fig7", "fig8", "fig9a", "fig9b", "fig10",
]  # fmt: skip

FIG1_GMM_A = (-0.1 / 1.01, 1 / 1.01)


def _value(d, t, col):
    """``col`` at iterate ``t`` of a run indexed by t; a ValueError (its claims are then recorded as
    not measurable) when the run stopped before ``t``."""
    if t not in d.index:
        raise ValueError(f"iterate t = {t} was not recorded (the run ends at t = {d.index.max()})")
    return d.loc[t, col]


def _at(df, t):
    return df[df.t == t].sort_values("init")


def _cos_to(df, direction):
    return cosine(df[["p1", "p2"]].to_numpy(), arr(direction)[None, :], axis=-1)


def _last_t(df):
    return int(df.t.max())


def _case(data, case):
    """One panel's rows, its meta entry and its last iteration."""
    df, meta = data
    d = df[df.case == case]
    return d, meta[case], _last_t(d)


def fig1a(fig1) -> list[Claim]:
    """Fig 1a: n = 1, every initialisation converges to the GMM."""
    d, m, T = _case(fig1, "fig1a")
    out = []
    out.append(
        within("gmm", "GMM p^mm = (−0.1, 1)/1.01", m["gmm"], FIG1_GMM_A, 1e-4, kind="sanity")
    )
    out.append(
        compare(
            "cos_gmm_t200",
            "every init: cos(p_200, GMM)",
            _cos_to(_at(d, 200), m["gmm"]).min(),
            ">",
            0.97,
            kind="paper",
        )
    )
    out.append(
        compare(
            "cos_gmm_final",
            f"every init converges to the GMM: cos(p_{T}, GMM) (the last step)",
            _cos_to(_at(d, T), m["gmm"]).min(),
            ">",
            0.999,
            kind="paper",
        )
    )
    return out


def fig1b(fig1) -> list[Claim]:
    """Fig 1b: n = 1, local convergence: the initialisation decides GMM or LMM."""
    (_, meta), (d, m, T) = fig1, _case(fig1, "fig1b")
    out = []
    out.append(
        within(
            "lmm", "LMM p^mm(α = square) = (1, 0)", m["lmm"], (1.0, 0.0), 1e-4, kind="sanity"
        )
    )
    inits = np.asarray(meta["inits"], dtype=float)
    to_gmm = inits >= -0.5
    last = _at(d, T)
    cg, cl = _cos_to(last, m["gmm"]), _cos_to(last, m["lmm"])
    out.append(
        compare(
            "gmm_split_final",
            f"inits y0 ≥ −0.5 reach the GMM: min cos(p_{T}, GMM) (the last step)",
            cg[to_gmm].min() if to_gmm.any() else np.nan,
            ">",
            0.999,
            kind="paper",
        )
    )
    out.append(
        compare(
            "lmm_split_final",
            f"inits y0 ≤ −1 reach the LMM (1, 0): min cos(p_{T}, LMM) (the last step)",
            cl[~to_gmm].min() if (~to_gmm).any() else np.nan,
            ">",
            0.999,
            kind="paper",
        )
    )
    at200 = _at(d, 200)
    out.append(
        compare(
            "gmm_split_t200",
            "y0 ≥ −0.5: cos(p_200, GMM)",
            _cos_to(at200, m["gmm"])[to_gmm].min(),
            ">",
            0.998,
            kind="paper",
        )
    )
    out.append(
        compare(
            "lmm_split_t200",
            "y0 ≤ −1: cos(p_200, LMM)",
            _cos_to(at200, m["lmm"])[~to_gmm].min(),
            ">",
            0.995,
            kind="paper",
        )
    )
    return out


def fig1c(fig1) -> list[Claim]:
    """Fig 1c: n = 3, T = 7, every initialisation converges to p^mm."""
    d, m, T = _case(fig1, "fig1c")
    out = []
    out.append(
        within(
            "gmm",
            "p^mm (2-D key space) = (0.8446, 0.1711)",
            m["gmm"],
            (0.8446, 0.1711),
            1e-3,
            kind="sanity",
        )
    )
    out.append(
        compare(
            "cos_gmm_t200",
            "every init: cos(p_200, p^mm)",
            _cos_to(_at(d, 200), m["gmm"]).min(),
            ">",
            0.999,
            kind="paper",
        )
    )
    out.append(
        compare(
            "cos_gmm_final",
            f"every init: cos(p_{T}, p^mm) (the last step)",
            _cos_to(_at(d, T), m["gmm"]).min(),
            ">",
            0.999,
            kind="paper",
        )
    )
    return out


def fig2(fig2) -> list[Claim]:
    """Fig 2: GD started in the cone around the LMM stays in it and converges to the LMM."""
    df, meta = fig2
    ins = df[df.inside]
    cos_lmm = _cos_to(ins, meta["lmm"])
    mu = meta["mu"]
    T = _last_t(df)
    mono = min(
        float(np.min(np.diff(g.sort_values("t").norm.to_numpy()))) for _, g in ins.groupby("init")
    )
    gmm_dir = arr(meta["gmm"]) / np.linalg.norm(meta["gmm"])
    return [
        within("lmm", "QP: LMM = (1, 0)", meta["lmm"], (1.0, 0.0), 1e-6, kind="sanity"),
        within(
            "gmm_dir",
            "QP: GMM ∝ (−0.5, 0.5)",
            gmm_dir,
            np.array([-1.0, 1.0]) / np.sqrt(2),
            1e-6,
            kind="sanity",
        ),
        compare(
            "stay_in_cone",
            "paths started in C_{μ,R} stay in the cone: min_t cos(p_t, LMM) ≥ 1 − μ",
            cos_lmm.min(),
            ">=",
            1 - mu,
            kind="paper",
        ),
        compare(
            "norm_nondecreasing",
            "‖p_t‖ non-decreasing along those paths (min increment)",
            mono,
            ">=",
            0.0,
            kind="paper",
        ),
        compare(
            "cos_lmm_final",
            f"cos(p_{T}, LMM) for paths started inside (the last step)",
            _cos_to(_at(ins, T), meta["lmm"]).min(),
            ">",
            0.999,
            kind="paper",
        ),
        compare(
            "outside_to_gmm",
            "contrast paths from outside reach the GMM: min cos",
            _cos_to(_at(df[~df.inside], T), meta["gmm"]).min() if (~df.inside).any() else np.nan,
            ">",
            0.99,
            kind="paper",
        ),
    ]


def _fig3_run(fig3, case):
    """A Fig 3 run: its meta entry, rows by t, last t, and p(t), v(t)."""
    df, meta = fig3
    d = df[df.case == case].set_index("t")
    p = lambda t: _value(d, t, ["p1", "p2"]).to_numpy(dtype=float)  # noqa: E731
    v = lambda t: _value(d, t, ["v1", "v2"]).to_numpy(dtype=float)  # noqa: E731
    return meta[case], d, int(d.index.max()), p, v


def fig3a(fig3) -> list[Claim]:
    """Fig 3a: joint (v, p) training converges to (v^mm, p^mm)."""
    m, _, T, p, v = _fig3_run(fig3, "fig3a")
    return [
        within("p_mm", "p^mm = (4/3, 1/3)", m["p_mm"], (4 / 3, 1 / 3), 1e-6, kind="sanity"),
        within("v_mm", "v^mm = (0, 1)", m["v_mm"], (0.0, 1.0), 1e-6, kind="sanity"),
        compare(
            "cos_p_t200",
            "cos(p_200, p^mm)",
            cosine(p(200), m["p_mm"]),
            ">",
            0.999,
            kind="paper",
        ),
        compare(
            "cos_v_t200",
            "cos(v_200, v^mm)",
            cosine(v(200), m["v_mm"]),
            ">",
            0.999,
            kind="paper",
        ),
        compare(
            "cos_p_final",
            f"float64: cos(p_{T}, p^mm) (the last step)",
            cosine(p(T), m["p_mm"]),
            ">",
            0.9999,
            kind="paper",
        ),
    ]


def fig3b(fig3) -> list[Claim]:
    """Fig 3b: joint (v, p) training converges to (v^mm, p^relax), not p^mm."""
    m, _, T, p, _ = _fig3_run(fig3, "fig3b")
    c_relax, c_mm = cosine(p(200), m["p_relax"]), cosine(p(200), m["p_mm"])
    return [
        within("p_relax", "p^relax = (1, 0)", m["p_relax"], (1.0, 0.0), 1e-6, kind="sanity"),
        within("p_mm", "p^mm = (1.25, 0.25)", m["p_mm"], (1.25, 0.25), 1e-6, kind="sanity"),
        within("v_mm", "v^mm = (0, 1)", m["v_mm"], (0.0, 1.0), 1e-6, kind="sanity"),
        holds(
            "support",
            "the yellow input is not a support vector of the v-SVM",
            m["support"],
            list(m["support"]) == [True, True, False],
            "[true, true, false]",
            kind="sanity",
        ),
        compare("cos_relax_t200", "cos(p_200, p^relax)", c_relax, ">", 0.999, kind="paper"),
        compare(
            "relax_beats_mm_t200",
            "cos(p_200, p^relax) − cos(p_200, p^mm)",
            c_relax - c_mm,
            ">",
            0.0,
            kind="paper",
        ),
        compare(
            "cos_relax_final",
            f"float64: cos(p_{T}, p^relax) (the last step)",
            cosine(p(T), m["p_relax"]),
            ">",
            0.9999,
            kind="paper",
        ),
    ]


def fig3c(fig3) -> list[Claim]:
    """Fig 3c: the softmax and logistic probabilities of the Fig 3a run saturate."""
    _, d, _, _, _ = _fig3_run(fig3, "fig3a")
    return [
        compare(
            "softmax_t100",
            "softmax prob. of selected tokens at t = 100",
            _value(d, 100, "softmax_prob"),
            ">",
            0.99,
            kind="paper",
        ),
        compare(
            "logistic_t100",
            "logistic prob. at t = 100",
            _value(d, 100, "logistic_prob"),
            ">",
            0.99,
            kind="paper",
        ),
        compare(
            "softmax_t200",
            "softmax prob. at t = 200",
            _value(d, 200, "softmax_prob"),
            ">=",
            0.999,
            kind="paper",
        ),
    ]


def _fig4_runs(fig4):
    """The NGD and GD runs of Fig 4, indexed by t."""
    df, _ = fig4
    return df[df.method == "ngd"].set_index("t"), df[df.method == "gd"].set_index("t")


def fig4a(fig4) -> list[Claim]:
    """Fig 4a: NGD saturates the softmax fast; GD's vanishing gradients slow it."""
    ngd, gd = _fig4_runs(fig4)
    return [
        compare(
            "ngd_prob_t50",
            "NGD softmax prob. at t = 50",
            _value(ngd, 50, "prob"),
            ">=",
            0.99,
            kind="paper",
        ),
        compare(
            "gd_prob_t100",
            "GD softmax prob. at t = 100 (vanishing gradients)",
            _value(gd, 100, "prob"),
            "<",
            0.95,
            kind="paper",
        ),
    ]


def fig4b(fig4) -> list[Claim]:
    """Fig 4b: ‖p(t)‖ grows linearly (≈ ηt) under NGD, logarithmically under GD."""
    ngd, gd = _fig4_runs(fig4)
    eta = float(ngd.lr.iloc[0])
    return [
        compare(
            "ngd_norm_lower",
            "NGD ‖p(200)‖ (linear growth ≈ ηt)",
            _value(ngd, 200, "norm"),
            ">=",
            0.95 * eta * 200,
            kind="paper",
        ),
        compare(
            "gd_norm",
            "GD ‖p(200)‖ (logarithmic growth)",
            _value(gd, 200, "norm"),
            "<",
            5.0,
            kind="paper",
        ),
    ]


def fig5(fig5) -> list[Claim]:
    """Fig 5: the sign of p_y(200) follows the loss and |p_y| grows with C."""
    df, meta = fig5
    at = df[df.t == 200]
    out = []
    for loss, sign in (("correlation", 1.0), ("logistic", -1.0)):
        g = at[at.loss == loss].sort_values("C")
        big = g[g.C >= 2]
        out.append(
            compare(
                f"sign_{loss}",
                f"{loss}: min over C ≥ 2 of sign·p_y(200), sign = {sign:+g}",
                float(np.min(sign * big.p2)),
                ">",
                0.0,
                kind="paper",
            )
        )
        out.append(
            compare(
                f"monotone_{loss}",
                f"{loss}: |p_y(200)| non-decreasing in C (min increment)",
                float(np.min(np.diff(np.abs(g.p2.to_numpy())))),
                ">=",
                -1e-12,
                kind="paper",
            )
        )
    out.append(within("gmm", "GMM = (1, 0)", meta["gmm"], (1.0, 0.0), 1e-6, kind="sanity"))
    return out


def fig8(fig8) -> list[Claim]:
    """Fig 8: n = 2, each initialisation reaches the limit the construction predicts."""
    df, meta = fig8
    T = _last_t(df)
    last = _at(df, T)
    cg, cl = _cos_to(last, meta["gmm"]), _cos_to(last, meta["lmm"])
    exp = last.expected.to_numpy()
    reached = np.where(cg > 0.999, "gmm", np.where(cl > 0.999, "lmm", "neither"))
    wrong = [meta["starts"][i] for i in np.flatnonzero(reached != exp)]
    return [
        within("gmm", "GMM = (1, 3)", meta["gmm"], (1.0, 3.0), 1e-6, kind="sanity"),
        within("lmm", "LMM = (1, 0)", meta["lmm"], (1.0, 0.0), 1e-6, kind="sanity"),
        compare("some_gmm", "best cos(p_T, GMM) over inits", cg.max(), ">", 0.999, kind="paper"),
        compare("some_lmm", "best cos(p_T, LMM) over inits", cl.max(), ">", 0.999, kind="paper"),
        holds(
            "expected_split",
            "every init reaches the limit the construction predicts (failing starts listed)",
            wrong,
            not wrong,
            "[]",
            kind="paper",
        ),
    ]
