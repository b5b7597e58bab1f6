"""Figures of Vasudeva, Deora, Thrampoulidis (fastrates), drawn from the plot-ready data only.

Curves are the mean over seeds of log10 quantities (a geometric mean) with a ±1 sd band; values
below 10⁻³⁰⁰ are clipped to 10⁻³⁰⁰ for the log axes.  The x-axis is the iteration t ≥ 1 on a log
scale.  Figures 8–10 and Table 1 are the spec's proposals and say so in their titles.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

from ..experiments.fastrates import LABELS, METHODS, RATE_COLUMNS, rate_table
from .style import METHOD_COLORS, new_figure

CLIP = -300.0  # log10 floor of the log axes


def _band(ax, df, col, method, log=True, color=None, ls="-", label=None, positive=False):
    d = df[(df.method == method) & (df.t >= 1)]
    g = d.groupby("t")[col]
    mean, sd = g.mean(), g.std(ddof=0).fillna(0.0)
    t = mean.index.to_numpy()
    color = color or METHOD_COLORS[method]
    label = LABELS[method] if label is None else label
    if log:
        lo, mid, hi = (10.0 ** np.maximum(v, CLIP) for v in (mean - sd, mean, mean + sd))
    else:
        lo, mid, hi = mean - sd, mean, mean + sd
        if positive:  # drawn on a log axis: leave out the exact zeros (W₀ = 0, u₀ = 0)
            keep = mid.to_numpy() > 0
            t, lo, mid, hi = t[keep], lo[keep].clip(lower=mid[keep].min() * 0.5), mid[keep], hi[keep]
    ax.plot(t, mid, color=color, ls=ls, label=label)
    ax.fill_between(t, lo, hi, color=color, alpha=0.2, lw=0)


def _top(df, col) -> float:
    """Upper y-limit for a log10 column: the highest mean + sd band edge, plus a margin."""
    g = df[df.t >= 1].groupby(["method", "t"])[col]
    return 10.0 ** (float((g.mean() + g.std(ddof=0).fillna(0.0)).max()) + 0.3)


def _decade_ticks(ax, max_ticks: int = 7) -> None:
    """Log-axis ticks at round multiples of decades (10⁰, 10⁻⁵⁰, 10⁻¹⁰⁰, …) for huge ranges."""
    lo, hi = np.log10(ax.get_ylim())
    if hi - lo <= 8:  # matplotlib's own decade ticks (with minor ticks) read better
        return
    for step in (1, 2, 5, 10, 20, 25, 50, 100):
        ticks = np.arange(np.ceil(lo / step) * step, hi + 1e-9, step)
        if len(ticks) <= max_ticks:
            break
    ax.yaxis.set_major_locator(FixedLocator(10.0**ticks))
    ax.yaxis.set_minor_locator(NullLocator())


def _axes(ax, title, ylabel, logy=True, top=None):
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if top is not None:
        ax.set_ylim(top=top)
    if logy:
        _decade_ticks(ax)
    ax.set_xlabel("iteration t")
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def _eta_line(ax, df, method="ngd"):
    eta = float(df[df.method == method].lr.iloc[0])
    t = np.array([1.0, float(df[df.method == method].t.max())])
    ax.plot(t, eta * t, color="0.4", ls=":", lw=1, label="ηt")


def _wonly(df, meta, title):
    fig, axes = new_figure(11.0, 2.9, ncols=4)
    for m in METHODS:
        _band(axes[0], df, "log10_excess", m)
        _band(axes[1], df, "log10_one_minus_sopt", m)
        _band(axes[2], df, "norm_W", m, log=False, positive=True)
        _band(axes[3], df, "log10_one_minus_corr", m)
    _eta_line(axes[2], df)
    _axes(axes[0], "(a) excess loss", "L(W_t) − L*", top=_top(df, "log10_excess"))
    _axes(axes[1], "(b) softmax saturation", "1 − s̄_opt", top=1.5)
    _axes(axes[2], "(c) norm growth", "‖W_t‖_F")
    _axes(axes[3], "(d) alignment with W_mm", "1 − corr(W_t, W_mm)")
    axes[0].legend(loc="lower left")
    axes[2].legend(loc="upper left")
    seeds = len(meta["seeds"])
    fig.suptitle(f"{title} (n={meta['n']}, T={meta['T']}, d={meta['d']}, η={meta['lr']:g}, PS multiplier 1; mean ± sd over {seeds} seeds)", fontsize=9)
    return fig


def _fig3(df, meta):
    fig, axes = new_figure(13.5, 2.9, ncols=5)
    for m in METHODS:
        _band(axes[0], df, "log10_excess", m)
        _band(axes[1], df, "sopt", m, log=False)
        _band(axes[2], df, "norm_W", m, log=False, label=f"{LABELS[m]} ‖W‖", positive=True)
        _band(axes[2], df, "norm_u", m, log=False, ls="--", label=f"{LABELS[m]} ‖u‖", positive=True)
        _band(axes[3], df, "log10_one_minus_corr", m)
        _band(axes[4], df, "log10_one_minus_corr_u", m)
    _axes(axes[0], "(a) loss", "L(W_t, u_t)", top=_top(df, "log10_excess"))
    _axes(axes[1], "(b) softmax score of opt", "s̄_opt", logy=False)
    _axes(axes[2], "(c) norms", "‖W_t‖_F (solid), ‖u_t‖ (dashed)")
    _axes(axes[3], "(d) alignment of W", "1 − corr(W_t, W_mm)")
    _axes(axes[4], "(e) alignment of u", "1 − corr(u_t, u_mm)")
    axes[0].legend(loc="lower left")
    axes[2].legend(loc="lower right", ncol=2, fontsize=5.5)
    fig.suptitle(
        f"Joint (W, u) training, Gaussian-like data (n={meta['n']}, T={meta['T']}, d={meta['d']}, σ={meta['sigma']:g}, "
        f"η={meta['lr']:g}, NGD norm: {meta['normalize']}; mean ± sd over {len(meta['seeds'])} seeds)",
        fontsize=9,
    )
    return fig


def _fig9(df, meta):
    fig, axes = new_figure(8.0, 3.0, ncols=2)
    for m in METHODS:
        d = df[(df.method == m) & (df.t >= 1)]
        for k, (_, g) in enumerate(d.groupby(["seed", "init"])):
            g = g.sort_values("t")
            kw = {"label": LABELS[m]} if k == 0 else {}
            axes[0].plot(g.t, 10.0 ** np.maximum(g.log10_one_minus_corr, CLIP), color=METHOD_COLORS[m], alpha=0.35, lw=0.8, **kw)
            axes[1].plot(g.t, 10.0 ** np.maximum(g.log10_excess, CLIP), color=METHOD_COLORS[m], alpha=0.35, lw=0.8)
    axes[0].axhline(1e-3, color="0.3", ls=":", lw=1, label="10⁻³ (claim)")
    _axes(axes[0], "(a) alignment with W_mm", "1 − corr(W_t, W_mm)")
    _axes(axes[1], "(b) excess loss", "L(W_t) − L*", top=_top(df, "log10_excess"))
    axes[0].legend(loc="lower left")
    n_runs = len(meta["seeds"]) * meta["inits_per_seed"]
    fig.suptitle(f"[proposal] Fig 2 from random W₀ ~ N(0, {meta['init_scale']:g}²): {n_runs} runs per method", fontsize=9)
    return fig


def _fig10(df, meta):
    fig, axes = new_figure(8.0, 3.0, ncols=2)
    lrs = np.asarray(meta["lrs"], dtype=float)
    for m in ("gd", "ngd"):
        d = df[df.method == m]
        last = d[d.t == d.t.max()].groupby("lr").log10_one_minus_corr
        mean, sd = last.mean().reindex(lrs), last.std(ddof=0).reindex(lrs).fillna(0.0)
        axes[0].errorbar(lrs, 10.0**mean, yerr=[10.0**mean - 10.0 ** (mean - sd), 10.0 ** (mean + sd) - 10.0**mean], color=METHOD_COLORS[m], marker="o", ms=4, capsize=2, label=LABELS[m])
        for lr, ls in zip(lrs, ["-", "--", "-.", ":"] * 4, strict=False):
            g = d[np.isclose(d.lr, lr) & (d.t >= 1)].groupby("t").log10_one_minus_corr.mean()
            axes[1].plot(g.index, 10.0 ** np.maximum(g.to_numpy(), CLIP), color=METHOD_COLORS[m], ls=ls, label=f"{LABELS[m]} η={lr:g}")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("step size η")
    axes[0].set_ylabel(f"1 − corr(W_T, W_mm), T = {meta['steps']}")
    axes[0].set_title("(a) last iterate vs η")
    axes[0].legend(loc="lower left")
    _axes(axes[1], "(b) alignment over t", "1 − corr(W_t, W_mm)")
    axes[1].legend(loc="lower left", ncol=2, fontsize=5.5)
    fig.suptitle(f"[proposal] Step-size sweep, GD vs NGD on the Fig 2 data (mean over {len(meta['seeds'])} seeds)", fontsize=9)
    return fig


def _table1(df, meta):
    tab = rate_table(df)
    heads = {
        "align_loglog": "1 − corr\nlog–log slope\nt ∈ [100, 1000]",
        "sat_exp": "1 − s̄_opt\nlog10 per step\nt ∈ [10, 100]",
        "sat_loglog": "1 − s̄_opt\nlog–log slope\nt ∈ [10, 100]",
        "norm_rate": "d‖W‖/dt\nt ∈ [100, 1000]",
        "loss_exp": "L − L*\nlog10 per step\nt ∈ [10, 100]",
    }
    assert set(heads) == set(RATE_COLUMNS)
    cells = []
    for _, r in tab.iterrows():
        step = f"multiplier {r.lr:g}" if r.method == "polyak" else f"η={r.lr:g}"
        cells.append([f"{LABELS[r.method]} ({step})"] + [f"{r[k]:.3g} ± {r[k + '_sd']:.2g}" for k in heads])
    fig, ax = new_figure(9.0, 2.2)
    ax.axis("off")
    table = ax.table(cellText=cells, colLabels=["method"] + list(heads.values()), loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1.0, 2.2)
    for (row, _), cell in table.get_celld().items():
        if row == 0:
            cell.set_height(cell.get_height() * 1.9)
            cell.set_facecolor("0.92")
    ax.set_title(f"[proposal] Table 1: fitted rates on the Fig 2 runs (mean ± sd over {int(tab.n_seeds.iloc[0])} seeds)")
    return fig


def plot(figure: str, data: tuple):
    df, meta = data
    if figure == "fig2":
        return _wonly(df, meta, "W-only training, nearly orthogonal tokens (Example 1, σ = 0)")
    if figure == "fig5":
        return _wonly(df, meta, "W-only training, antipodal opt tokens")
    if figure == "fig8":
        return _wonly(df, meta, f"[proposal] Fig 2 with noisy tokens, σ = {meta['sigma']:g}")
    if figure == "fig3":
        return _fig3(df, meta)
    if figure == "fig9":
        return _fig9(df, meta)
    if figure == "fig10":
        return _fig10(df, meta)
    if figure == "table1":
        return _table1(df, meta)
    raise KeyError(f"no fastrates figure {figure!r}")
