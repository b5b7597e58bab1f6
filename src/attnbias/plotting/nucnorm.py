"""Figures p1–p5 of the nucnorm demonstrations (Sheen et al. 2024 has no figures of its own),
drawn from the plot-ready data of :mod:`attnbias.experiments.nucnorm`.

Colour code: red = separate (K, Q) / nuclear norm / ℓ1; blue = merged W / Frobenius / ℓ2.

One public function per figure, named after it (``p1``, ..., ``p5``), found by name by the plot
rule.  Its one argument is named after the data group it reads (``p1`` for
``results/data/nucnorm/p1.csv``), a ``(DataFrame, meta)`` pair; it returns the matplotlib figure.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .style import FLOAT_EPS, log_floor, new_figure, suptitle

NUC, FRO = "tab:red", "tab:blue"
TAG = "project demonstration"


def _steps_axis(ax, df):
    ax.set_xscale("log")
    ax.set_xlim(1, max(2, df.t.max()))
    ax.set_xlabel("step t")


def _pos(x):
    """Positive part for log axes (non-positive and non-finite → NaN, i.e. not drawn)."""
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x) & (x > 0), x, np.nan)


def _check_line(ax, t):
    ax.axvline(t, color="0.5", ls=":", lw=0.9)


def p1(p1):
    """p1: separate K, Q → nuclear-norm SVM; merged W → Frobenius SVM."""
    df, meta = p1
    inst = meta["instances"]
    T = meta["check_step"]
    fig, axes = new_figure(11.0, 2.75 * len(inst), ncols=4, nrows=len(inst), squeeze=False)
    for r, info in enumerate(inst):
        d = df[(df.instance == info["name"]) & (df.t >= 1)]
        kq, mg = d[d.model == "kq"], d[d.model == "merged"]
        lab = f"{info['name']}: n={info['n']}, L={info['L']}, d={info['d']}, seed {info['seed']}"
        ax = axes[r, 0]
        ax.plot(kq.t, kq.corr_nuc, color=NUC, label="corr(KQᵀ, W*_nuc)")
        ax.plot(kq.t, kq.corr_frob, color=NUC, ls="--", label="corr(KQᵀ, W*_F)")
        ax.plot(mg.t, mg.corr_frob, color=FRO, label="corr(W, W*_F)")
        ax.plot(mg.t, mg.corr_nuc, color=FRO, ls="--", label="corr(W, W*_nuc)")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("correlation")
        ax.set_title(f"(a) {lab}")
        ax.legend(loc="lower right", fontsize=6)
        ax = axes[r, 1]
        ax.plot(kq.t, _pos(kq.ratio_nuc - 1), color=NUC, label="R_nuc(KQᵀ) − 1")
        ax.plot(mg.t, _pos(mg.ratio_frob - 1), color=FRO, label="R_F(W) − 1")
        ax.set_yscale("log")
        log_floor(ax)  # round-off of the ratio, computed in float64
        ax.set_ylabel("objective ratio − 1")
        ax.set_title("(b) margin-normalised norm / SVM optimum")
        ax.legend(loc="upper right", fontsize=6)
        for a in axes[r, :2]:
            _steps_axis(a, d)
            _check_line(a, T)
        ax = axes[r, 2]
        spec = info["spectra_at_check"]
        r_kq, r_mg = (int(g[g.t == T]["rank"].iloc[0]) for g in (kq, mg))
        names = [
            ("kq", f"KQᵀ (rank {r_kq})", NUC, None),
            ("nuc", f"W*_nuc (rank {info['rank_nuc']})", NUC, "//"),
            ("merged", f"W (rank {r_mg})", FRO, None),
            ("frob", f"W*_F (rank {info['rank_frob']})", FRO, "//"),
        ]
        k = len(spec["kq"])
        x = np.arange(1, k + 1)
        for j, (key, name, color, hatch) in enumerate(names):
            vals = np.asarray(spec[key], dtype=float)
            ax.bar(
                x + (j - 1.5) * 0.2,
                vals,
                0.2,
                color=color,
                alpha=0.9 if hatch is None else 0.35,
                hatch=hatch,
                edgecolor=color,
                label=name,
            )
        ax.axhline(1e-2, color="0.4", ls=":", lw=0.8)
        ax.axhline(1e-4, color="0.4", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylim(FLOAT_EPS["float64"], 1e9)  # σ_i/σ_1 ≤ 1; above 1: room for the legend
        log_floor(ax, side=None)  # σ_i/σ_1 below float64's resolution (exact 0 too) drawn on it
        ax.set_yticks(10.0 ** np.arange(-15, 1, 3))
        ax.set_xticks(x)
        ax.set_xlabel("singular value index i")
        ax.set_ylabel("σ_i / σ_1")
        ax.set_title(f"(c) normalised spectra at t = {T}")
        ax.legend(loc="upper right", fontsize=5.5, ncols=2)
        ax = axes[r, 3]
        ax.plot(kq.t, kq.log10_excess, color=NUC, label="separate K, Q")
        ax.plot(mg.t, mg.log10_excess, color=FRO, label="merged W")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylabel(r"$\log_{10}(\mathcal{L} - \mathcal{L}^*)$ (symlog axis)")
        ax.set_title("(d) excess risk")
        ax.legend(loc="lower left", fontsize=6)
        _steps_axis(ax, d)
    suptitle(
        fig,
        f"p1 ({TAG}): separate K, Q → nuclear-norm SVM; merged W → Frobenius SVM\n"
        f"jointly normalised GD, η = {meta['lr']:g}; dotted vertical line: check step; "
        f"(c) rank thresholds {meta['rank_tol_trained']:g} (trained, dotted) "
        f"and {meta['rank_tol_solver']:g} (solvers, dashed)",
        fontsize=9,
    )
    return fig


def _stems(ax, beta, ref, color, marker, offset, label_ref, label_beta):
    x = np.arange(1, len(ref) + 1) + offset
    ref = np.asarray(ref, dtype=float)
    beta = np.asarray(beta, dtype=float)
    ref = ref / np.max(np.abs(ref))
    beta = beta / np.max(np.abs(beta))
    ax.vlines(x, 0, ref, color=color, alpha=0.35, lw=3, label=label_ref)
    ax.plot(x, beta, marker, color=color, ms=4, label=label_beta, ls="none")


def p2(p2):
    """p2: diagonal K, Q → ℓ1-SVM; β trained directly → ℓ2-SVM."""
    df, meta = p2
    inst = meta["instances"]
    T = meta["check_step"]
    stems = [f"b{j}" for j in range(len(inst))]
    fig = Figure(figsize=(11.0, 3.9))
    axd = fig.subplot_mosaic(
        [["a", *stems], ["leg", *stems]],
        width_ratios=[1.3] + [1] * len(inst),
        height_ratios=[3, 1],
    )
    axes = [axd["a"]] + [axd[k] for k in stems]
    ax = axes[0]
    styles = ["-", "--", ":"]
    for model, col, color, name in (
        ("xi", "ratio_l1", NUC, "(ξ_k, ξ_q): R_ℓ1"),
        ("beta", "ratio_l1", "tab:purple", "β: R_ℓ1"),
        ("beta", "ratio_l2", FRO, "β: R_ℓ2"),
    ):
        for j, info in enumerate(inst):
            g = df[(df.instance == j) & (df.t >= 1) & (df.model == model)]
            ax.plot(
                g.t,
                _pos(g[col] - 1),
                color=color,
                ls=styles[j % 3],
                label=f"{name}, seed {info['seed']}",
            )
    ax.axhline(0.01, color="0.4", ls=":", lw=0.8)
    ax.axhline(0.15, color="0.4", ls="--", lw=0.8)
    ax.set_yscale("log")
    log_floor(ax)
    ax.set_ylabel("objective ratio − 1")
    ax.set_title("(a) R − 1 (lines: seeds; gray: 0.01, 0.15)")
    axd["leg"].axis("off")
    axd["leg"].legend(
        *ax.get_legend_handles_labels(),
        fontsize=5.5,
        loc="center",
        ncols=3,
        columnspacing=0.8,
        handlelength=1.8,
    )
    _steps_axis(ax, df[df.t >= 1])
    _check_line(ax, T)
    for j, info in enumerate(inst):
        ax = axes[1 + j]
        _stems(ax, info["beta_xi_at_check"], info["l1"], NUC, "o", -0.15, "β*_ℓ1", "ξ_k⊙ξ_q")
        _stems(ax, info["beta_at_check"], info["l2"], FRO, "x", 0.15, "β*_ℓ2", "β (direct)")
        ax.axhline(0, color="0.3", lw=0.6)
        last = df[(df.instance == j) & (df.t == T)]
        sx = int(last[last.model == "xi"].support.iloc[0])
        sb = int(last[last.model == "beta"].support.iloc[0])
        uniq = "unique" if info["l1_unique"] else "not unique"
        ax.set_title(
            f"(b) seed {info['seed']} (ℓ1 optimum {uniq})\nsupport: ξ_k⊙ξ_q {sx}, β*_ℓ1 "
            f"{info['support_l1']}, β {sb}",
            fontsize=7.5,
        )
        ax.set_xlabel("coordinate j")
        ax.set_xticks(range(1, meta["d"] + 1))
        ax.set_ylim(-1.15, 1.15)
        if j == 0:
            ax.set_ylabel("β_j / max|β|")
            ax.legend(fontsize=5.5, loc="lower left")
    suptitle(
        fig,
        f"p2 ({TAG}): diagonal K, Q (ξ_k(0) = {meta['xi0']:g}·1, ξ_q(0) = 0) → ℓ1-SVM; "
        "β trained directly → ℓ2-SVM "
        f"(n={meta['n']}, L={meta['L']}, d={meta['d']}, η={meta['lr']:g}, stems at t={T})",
        fontsize=9,
    )
    return fig


def p3(p3):
    """p3: the initialisation condition is necessary (a sign-locked start)."""
    df, meta = p3
    fig, axes = new_figure(9.0, 3.2, ncols=2, gridspec_kw={"width_ratios": [1.3, 1]})
    ax = axes[0]
    colors = {"sign_locked": "0.2", "valid": NUC, "random": "tab:orange"}
    short = {lab: (lab.split(", ")[-1] if kind == "valid" else kind.replace("_", "-"))
             for lab, kind in df.groupby("init", sort=False).kind.first().items()}  # fmt: skip
    styles = iter(["-", "--", ":", "-."])
    for label, g in df[df.t >= 1].groupby("init", sort=False):
        kind = g.kind.iloc[0]
        ax.plot(
            g.t,
            _pos(g.ratio_l1),
            color=colors[kind],
            ls="-" if kind != "valid" else next(styles),
            label=label,
        )
    ax.axhline(2, color="0.4", ls=":", lw=0.8)
    ax.axhline(1.05, color="0.4", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("R_ℓ1 (gaps: margin ≤ 0)")
    ax.set_title("(a) R_ℓ1 by initialisation (gray: 2 and 1.05)")
    ax.legend(fontsize=6, loc="upper right")
    _steps_axis(ax, df[df.t >= 1])
    ax = axes[1]
    l1 = np.asarray(meta["l1"], dtype=float)
    k = len(l1)
    x = np.arange(1, k + 1)
    ax.vlines(x, 0, l1 / np.max(np.abs(l1)), color=NUC, alpha=0.35, lw=4, label="β*_ℓ1")
    last = df[df.t == df.t.max()].set_index("init")
    for (label, beta), mk, off in zip(
        meta["final_beta"].items(), ["s", "o", "^", "x"], [-0.24, -0.08, 0.08, 0.24], strict=False
    ):
        b = np.asarray(beta, dtype=float)
        kind = last.loc[label, "kind"]
        ax.plot(x + off, b / np.max(np.abs(b)), mk, ms=4, ls="none", color=colors[kind],
                label=f"{short[label]} (R_ℓ1 = {last.loc[label, 'ratio_l1']:.3f})")  # fmt: skip
    ax.axhline(0, color="0.3", lw=0.6)
    ax.set_xticks(x)
    ax.set_xlabel("coordinate j")
    ax.set_ylabel("β_j / max|β| at the last step")
    ax.set_title("(b) final directions vs β*_ℓ1 (legend: final R_ℓ1)")
    ax.set_ylim(-2.3, 1.15)
    ax.legend(fontsize=5.5, loc="lower center", ncols=2)
    suptitle(
        fig,
        f"p3 ({TAG}): the initialisation condition is necessary —\na sign-locked start "
        "(β = ξ_k² ≥ 0) cannot reach "
        f"the ℓ1-SVM (n={meta['n']}, L={meta['L']}, d={meta['d']}, seed {meta['seed']}, "
        f"η={meta['lr']:g})",
        fontsize=8,
    )
    return fig


def p4(p4):
    """p4: Lemma 5.1 on aligned data."""
    df, meta = p4
    fig, axes = new_figure(9.0, 3.2, ncols=2)
    ax = axes[0]
    for init, color in (("aligned", NUC), ("control", "0.3")):
        g = df[(df.init == init) & (df.t >= 1)]
        ax.plot(g.t, g.offdiag_K, color=color, label=f"{init}: K")
        ax.plot(g.t, g.offdiag_Q, color=color, ls="--", label=f"{init}: Q")
    ax.axhline(1e-10, color="0.4", ls=":", lw=0.8)
    ax.axhline(1e-2, color="0.4", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylim(top=10)
    log_floor(ax)  # an exactly preserved alignment (offdiag 0) is drawn on the floor
    ax.set_ylabel("‖offdiag(K R)‖_F / ‖K‖_F")
    ax.set_title("(a) alignment K = diag(σ)Rᵀ is preserved (gray: 1e-10, 1e-2)")
    ax.legend(fontsize=6, loc="center right")
    _steps_axis(ax, df[df.t >= 1])
    ax = axes[1]
    for init, color in (("aligned", NUC), ("control", "0.3")):
        g = df[(df.init == init) & (df.t >= 1)]
        ax.plot(g.t, g.corr_svm, color=color, label=f"{init}: corr(KQᵀ, W*)")
        ax.plot(g.t, _pos(g.ratio_nuc - 1), color=color, ls="--", label=f"{init}: R_nuc − 1")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 20)
    ax.set_ylabel("correlation / objective ratio − 1")
    ax.set_title(
        "(b) both reach a nuclear-norm optimum; only the aligned\nrun reaches "
        "the diagonal W* = W*_nuc = W*_F",
        fontsize=8,
    )
    ax.legend(fontsize=6, loc="lower left")
    _steps_axis(ax, df[df.t >= 1])
    suptitle(
        fig,
        f"p4 ({TAG}): Lemma 5.1 on aligned data (n={meta['n']}, L={meta['L']}, d={meta['d']}, "
        "z_i = e_(i mod d), "
        f"η={meta['lr']:g})",
        fontsize=9,
    )
    return fig


def p5(p5):
    """p5 (convex only): ranks of the nuclear-norm and Frobenius SVM solutions."""
    df, meta = p5
    cells = df.groupby(["n", "L"], sort=True)
    ncell = len(cells)
    ncols = 2
    nrows = int(np.ceil(ncell / ncols))
    fig, axes = new_figure(8.0, 2.8 * nrows, ncols=ncols, nrows=nrows, squeeze=False)
    for ax, ((n, L), g) in zip(axes.flat, cells, strict=False):
        feas = g[g.feasible.astype(bool)]
        st = feas.groupby("d").agg(
            nuc=("rank_nuc", "mean"),
            nuc_sd=("rank_nuc", "std"),
            frob=("rank_frob", "mean"),
            frob_sd=("rank_frob", "std"),
        )
        ax.errorbar(
            st.index,
            st.nuc,
            yerr=st.nuc_sd.fillna(0),
            color=NUC,
            marker="o",
            ms=3,
            capsize=2,
            label="rank W*_nuc",
        )
        ax.errorbar(
            st.index,
            st.frob,
            yerr=st.frob_sd.fillna(0),
            color=FRO,
            marker="s",
            ms=3,
            capsize=2,
            label="rank W*_F",
        )
        ax.set_xlabel("d")
        ax.set_xticks(sorted(g.d.unique()))
        ax.set_ylabel(f"mean rank (τ = {meta['rank_tol']:g})")
        ax.set_title(f"n = {n}, L = {L} (n(L−1) = {n * (L - 1)} constraints)")
        ax2 = ax.twinx()
        frac = g.groupby("d").feasible.mean()
        ax2.plot(
            frac.index, frac.to_numpy(), color="0.5", ls=":", marker=".", label="feasible fraction"
        )
        ax2.set_ylim(0, 1.05)
        ax2.set_ylabel("feasible fraction", color="0.4")
        ax2.grid(False)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=6, loc="center right")
    for ax in list(axes.flat)[ncell:]:
        ax.set_visible(False)
    suptitle(
        fig,
        f"p5 ({TAG}, convex only): ranks of the two SVM solutions\n"
        f"{meta['instances']} random instances per cell; mean ± sd over the feasible ones",
        fontsize=9,
    )
    return fig
