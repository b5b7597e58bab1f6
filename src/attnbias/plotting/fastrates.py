"""Figures of Vasudeva, Deora, Thrampoulidis (fastrates), drawn from the plot-ready data only.

Curves are the mean over seeds of log10 quantities (a geometric mean) with a ±1 sd band.  The
data keep these log10 values far below float64's range (computed in log space); each log panel
stops at its float64 floor, machine epsilon (2.2·10⁻¹⁶) times the largest value it draws, drawn
as a labelled dashed line, and draws lower values on it (:func:`.style.log_floor`).  The x-axis is
the iteration t ≥ 1 on a log scale.  Figures 8–10 and Table 1 are the project's proposals and say
so in their titles.

One public function per figure, named after it (``fig1``, ..., ``table1``), found by name by the
plot rule.  Its arguments are named after the data groups it reads (``fig2`` for
``results/data/fastrates/fig2.csv``, which Table 1 also reads), each a ``(DataFrame, meta)`` pair;
it returns the matplotlib figure.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

from ..analysis.fastrates import DL_LABELS, LABELS, METHODS, RATE_COLUMNS, rate_table
from .style import (
    GRID_WIDTH,
    METHOD_COLORS,
    draw_band,
    figure_legend,
    log_floor,
    new_figure,
    seed_band,
    seeds_of,
    suptitle,
)

CLIP = -300.0  # log10 values are drawn as 10^max(v, CLIP) (no underflow), then at the panel's floor
# what the negative control (--config control=null) removes, per figure (the banner of plot.py)
_SGD_SLOTS = "SNGD and SPS run plain SGD on SGD's grid"
CONTROL_NOTES = {
    "fig1": _SGD_SLOTS,
    "fig4": _SGD_SLOTS,
    "fig7": _SGD_SLOTS,
    "fig6": "NGD and PS replaced by GD at their step sizes",
}


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
            t, lo, mid, hi = (
                t[keep],
                lo[keep].clip(lower=mid[keep].min() * 0.5),
                mid[keep],
                hi[keep],
            )
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


def _axes(ax, title, ylabel, logy=True, top=None, floor_fontsize=5.5):
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if top is not None:
        ax.set_ylim(top=top)
    if logy:
        log_floor(ax, fontsize=floor_fontsize)
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
    axes[0].legend(loc="center left")  # clear of the floor
    axes[2].legend(loc="upper left")
    seeds = len(meta["seeds"])
    suptitle(
        fig,
        f"{title} (n={meta['n']}, T={meta['T']}, d={meta['d']}, η={meta['lr']:g}, PS multiplier "
        f"1; mean ± sd over {seeds} seeds)",
        fontsize=9,
    )
    return fig


def fig2(fig2):
    """Fig 2: W-only training on nearly orthogonal tokens (Example 1, σ = 0)."""
    return _wonly(*fig2, "W-only training, nearly orthogonal tokens (Example 1, σ = 0)")


def fig5(fig5):
    """Fig 5: W-only training with antipodal opt tokens."""
    return _wonly(*fig5, "W-only training, antipodal opt tokens")


def fig8(fig8):
    """[proposal] Fig 8: Fig 2 with noisy tokens."""
    df, meta = fig8
    return _wonly(df, meta, f"[proposal] Fig 2 with noisy tokens, σ = {meta['sigma']:g}")


def fig3(fig3):
    """Fig 3: joint (W, u) training on Gaussian-like data."""
    df, meta = fig3
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
    axes[0].legend(loc="center left")  # clear of the floor
    axes[2].legend(loc="lower right", ncol=2, fontsize=5.5)
    suptitle(
        fig,
        f"Joint (W, u) training, Gaussian-like data (n={meta['n']}, T={meta['T']}, "
        f"d={meta['d']}, σ={meta['sigma']:g}, "
        f"η={meta['lr']:g}, NGD norm: {meta['normalize']}; mean ± sd over {len(meta['seeds'])} "
        "seeds)",
        fontsize=9,
    )
    return fig


def fig9(fig9):
    """[proposal] Fig 9: the step-size study of the Fig 2 setting."""
    df, meta = fig9
    fig, axes = new_figure(8.0, 3.0, ncols=2)
    for m in METHODS:
        d = df[(df.method == m) & (df.t >= 1)]
        for k, (_, g) in enumerate(d.groupby(["seed", "init"])):
            g = g.sort_values("t")
            kw = {"label": LABELS[m]} if k == 0 else {}
            axes[0].plot(
                g.t,
                10.0 ** np.maximum(g.log10_one_minus_corr, CLIP),
                color=METHOD_COLORS[m],
                alpha=0.35,
                lw=0.8,
                **kw,
            )
            axes[1].plot(
                g.t,
                10.0 ** np.maximum(g.log10_excess, CLIP),
                color=METHOD_COLORS[m],
                alpha=0.35,
                lw=0.8,
            )
    axes[0].axhline(1e-3, color="0.3", ls=":", lw=1, label="10⁻³ (claim)")
    _axes(axes[0], "(a) alignment with W_mm", "1 − corr(W_t, W_mm)")
    _axes(axes[1], "(b) excess loss", "L(W_t) − L*", top=_top(df, "log10_excess"))
    axes[0].legend(loc="lower left")
    n_runs = len(meta["seeds"]) * meta["inits_per_seed"]
    suptitle(
        fig,
        f"[proposal] Fig 2 from random W₀ ~ N(0, {meta['init_scale']:g}²): {n_runs} runs per "
        "method",
        fontsize=9,
    )
    return fig


def fig10(fig10):
    """[proposal] Fig 10: GD and NGD across step sizes."""
    df, meta = fig10
    fig, axes = new_figure(8.0, 3.0, ncols=2)
    lrs = np.asarray(meta["lrs"], dtype=float)
    for m in ("gd", "ngd"):
        d = df[df.method == m]
        last = d[d.t == d.t.max()].groupby("lr").log10_one_minus_corr
        mean, sd = last.mean().reindex(lrs), last.std(ddof=0).reindex(lrs).fillna(0.0)
        axes[0].errorbar(
            lrs,
            10.0**mean,
            yerr=[10.0**mean - 10.0 ** (mean - sd), 10.0 ** (mean + sd) - 10.0**mean],
            color=METHOD_COLORS[m],
            marker="o",
            ms=4,
            capsize=2,
            label=LABELS[m],
        )
        for lr, ls in zip(lrs, ["-", "--", "-.", ":"] * 4, strict=False):
            g = d[np.isclose(d.lr, lr) & (d.t >= 1)].groupby("t").log10_one_minus_corr.mean()
            axes[1].plot(
                g.index,
                10.0 ** np.maximum(g.to_numpy(), CLIP),
                color=METHOD_COLORS[m],
                ls=ls,
                label=f"{LABELS[m]} η={lr:g}",
            )
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    log_floor(axes[0])
    axes[0].set_xlabel("step size η")
    axes[0].set_ylabel(f"1 − corr(W_T, W_mm), T = {meta['steps']}")
    axes[0].set_title("(a) last iterate vs η")
    axes[0].legend(loc="lower left")
    _axes(axes[1], "(b) alignment over t", "1 − corr(W_t, W_mm)")
    axes[1].legend(loc="lower left", ncol=2, fontsize=5.5)
    suptitle(
        fig,
        "[proposal] Step-size sweep, GD vs NGD on the Fig 2 data (mean over "
        f"{len(meta['seeds'])} seeds)",
        fontsize=9,
    )
    return fig


def table1(fig2):
    """[proposal] Table 1: fitted rates on the Fig 2 runs."""
    df, meta = fig2
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
        cells.append(
            [f"{LABELS[r.method]} ({step})"] + [f"{r[k]:.3g} ± {r[k + '_sd']:.2g}" for k in heads]
        )
    fig, ax = new_figure(9.0, 2.2)
    ax.axis("off")
    table = ax.table(
        cellText=cells, colLabels=["method"] + list(heads.values()), loc="center", cellLoc="center"
    )
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1.0, 2.2)
    for (row, _), cell in table.get_celld().items():
        if row == 0:
            cell.set_height(cell.get_height() * 1.9)
            cell.set_facecolor("0.92")
    ax.set_title(
        "[proposal] Table 1: fitted rates on the Fig 2 runs (mean ± sd over "
        f"{int(tab.n_seeds.iloc[0])} seeds)"
    )
    return fig


# --------------------------------------------------------------------------- deep-learning figures


def _dl_color(opt: str) -> str:
    return METHOD_COLORS["adam" if opt == "adamw" else opt]


def _dl_step_label(opt: str, value: float, meta: dict) -> str:
    """Legend entry: the optimiser and its chosen step-size setting (SNGD's η and SPS's c, which
    the probe of each seed sets, as their mean over the seeds)."""
    runs = list((meta.get("runs_by_seed") or {"0": meta["runs"]}).values())
    if opt == "sngd":
        eff = meta["selection"][opt].get("chosen_effective_lr", value)
        matched = (runs[0].get(opt) or {}).get("step_size_matching")
        return f"SNGD (η={eff:.3g}" + (f", matched to SGD lr {value:g})" if matched else ")")
    if opt == "sps":
        cs = [((r.get(opt) or {}).get("optimizer_extra") or {}).get("c") for r in runs]
        cs = [c for c in cs if c is not None]
        if cs:
            return f"SPS (c={np.mean(cs):.3g}, matched to SGD lr {value:g})"
        return f"SPS (lr={value:g})"
    return f"{DL_LABELS[opt]} (lr={value:g})"


def _grids_text(meta: dict) -> str:
    parts = []
    for o in meta["optimizers"]:
        e = meta["selection"][o]
        g = "{" + ", ".join(f"{v:g}" for v in e["grid"]) + "}"
        parts.append(f"{DL_LABELS[o]} {g}")
    return "; ".join(parts)


def _dl_figure(df, meta, title: str):
    """Train loss, train accuracy, test loss and test accuracy per optimiser (the grid value chosen
    on the validation split drawn solid; the other grid values thin and faint), a 2 × 2 grid with
    the legend under it (legible at the report's width: :data:`.style.GRID_WIDTH`)."""
    x_unit = meta.get("x_unit", "steps")
    xcol = "epoch" if x_unit == "epochs" else "step"
    fig, axes = new_figure(GRID_WIDTH, 6.6, ncols=2, nrows=2, layout="constrained")
    axes = axes.ravel()
    panels = [
        ("train_loss", "(a) train loss", "cross-entropy"),
        ("train_acc", "(b) train accuracy", "accuracy"),
        ("test_loss", "(c) test loss", "cross-entropy"),
        ("test_acc", "(d) test accuracy", "accuracy"),
    ]
    seeds = seeds_of(df)
    for opt in meta["optimizers"]:
        d = df[df.optimizer == opt]
        for value, g in d.groupby("lr"):
            chosen = bool(g.selected.iloc[0])
            label = _dl_step_label(opt, value, meta) if chosen else None
            for ax, (col, _, _) in zip(axes, panels, strict=True):
                # the mean over the seeds; the chosen value's min-max band
                h = seed_band(g.dropna(subset=[col]), [xcol], col)
                if h.empty:
                    continue
                kw = (
                    {"lw": 1.4, "marker": "o" if col.startswith("test") else None, "ms": 2.5}
                    if chosen
                    else {"lw": 0.7, "alpha": 0.3, "ls": "--"}
                )
                if not chosen:  # no band
                    h = h.assign(min=h["mean"], max=h["mean"])
                draw_band(ax, h.index, h, _dl_color(opt), band_alpha=0.18,
                          label=label if col == "test_loss" else None, **kw)  # fmt: skip
    chosen_rows = df[df.selected.astype(bool)]
    for ax, (col, t, yl) in zip(axes, panels, strict=True):
        ax.set_title(t)
        ax.set_xlabel(x_unit)
        ax.set_ylabel(yl)
        if col.endswith("loss"):  # scaled to the chosen runs: a diverged grid value runs off it
            v = chosen_rows[col].to_numpy(float)
            v = v[np.isfinite(v)]
            if v.size:
                pad = 0.1 * max(float(v.max() - v.min()), 1e-3)
                ax.set_ylim(max(0.0, float(v.min()) - pad), float(v.max()) + pad)
    handles, labels = axes[2].get_legend_handles_labels()
    figure_legend(fig, handles, labels, ncols=2, fontsize=8, title="chosen values",
                  title_fontsize=8)  # fmt: skip
    sel = meta.get("select_at")
    where = f"{x_unit[:-1]} {sel}" if sel else "the end"
    over = (
        f"curves: mean over seeds {', '.join(str(int(x)) for x in seeds)}, band: min-max; "
        if len(seeds) > 1
        else ""
    )
    mean = "seed-mean " if len(seeds) > 1 else ""
    note = (
        f"{over}learning rate per optimiser chosen on the {mean}validation loss "
        f"({meta['sizes']['val']} examples) at {where}; faint dashed: the other grid values"
        f"\ngrids: {_grids_text(meta)}"
    )
    stand_in = meta.get("stand_in")
    head = f"{title}\n[stand-in: {stand_in}]" if stand_in else title
    suptitle(fig, f"{head}\n{note}", fontsize=8)
    return fig


def _text_title(number: int, task: str, meta: dict) -> str:
    """Title of a fine-tuning figure (Figs 1, 4): paper figure ``number`` on ``task``."""
    size = f", batch {meta['batch_size']}, max length {meta['max_length']}, {meta['steps']} steps"
    if meta["model"] == "minilm":
        cut = f", first {meta['layers']} of 6 layers" if meta.get("layers", 6) != 6 else ""
        return (
            f"Fig {number} (paper: BERT on {task}): fine-tuning the pretrained MiniLM-L6 "
            f"({meta['parameters'] / 1e6:.1f}\u00a0M parameters{cut}){size}"
        )
    return (
        f"Fig {number}: fine-tuning {meta['model']} "
        f"({meta['parameters'] / 1e6:.0f}\u00a0M parameters) on {task}{size}"
    )


def fig1(fig1):
    """Fig 1: SGD, SNGD, SPS and AdamW fine-tuning on MNLI."""
    df, meta = fig1
    return _dl_figure(df, meta, _text_title(1, "MNLI", meta))


def fig4(fig4):
    """Fig 4: SGD, SNGD, SPS and AdamW fine-tuning on CivilComments."""
    df, meta = fig4
    return _dl_figure(df, meta, _text_title(4, "CivilComments", meta))


def fig7(fig7):
    """[proposal] Fig 7: SGD, SNGD, SPS and AdamW training a ViT from scratch."""
    df, meta = fig7
    m = dict(meta["settings"], **meta["model"])
    what = "CIFAR-10" if meta["dataset"] == "cifar10" else "digits"
    title = (
        f"[proposal] Fig 7: ViT ({m['layers']} layers, hidden {m['hidden']}, "
        f"{m['tokens']} tokens) trained from scratch on {what}, "
        f"batch {meta['batch_size']}, {meta['epochs']} epochs"
    )
    return _dl_figure(df, meta, title)


def fig6(fig6):
    """[proposal] Fig 6: joint (W, u) training on MNIST (or digits) 0 vs 1."""
    df, meta = fig6
    fig, axes = new_figure(GRID_WIDTH, 6.2, ncols=2, nrows=2, layout="constrained")
    axes = axes.ravel()
    sel = df.selected.astype(bool) if "selected" in df else df.method.notna()
    for m in METHODS:
        c = METHOD_COLORS[m]
        for _, o in df[(df.method == m) & ~sel & (df.t >= 1)].groupby("lr"):  # other step sizes
            o = o.sort_values("t")
            axes[0].plot(o.t, 10.0 ** np.maximum(o.log10_loss, CLIP), color=c, ls="--", lw=0.6,
                         alpha=0.35)  # fmt: skip
        d = df[(df.method == m) & sel & (df.t >= 1)].sort_values("t")
        eta = f" η={d.lr.iloc[0]:g}" if m != "polyak" and len(d) else ""
        axes[0].plot(d.t, 10.0 ** np.maximum(d.log10_loss, CLIP), color=c, label=LABELS[m] + eta)
        axes[1].plot(d.t, d.test_acc, color=c, label=f"{LABELS[m]} test")
        axes[1].plot(d.t, d.train_acc, color=c, ls=":", lw=0.9)
        w, u = d[d.norm_W > 0], d[d.norm_u > 0]  # log axis: W_t = 0 until u ≠ 0 moves it
        axes[2].plot(w.t, w.norm_W, color=c, label=f"{LABELS[m]} ‖W‖")
        axes[2].plot(u.t, u.norm_u, color=c, ls="--", label=f"{LABELS[m]} ‖u‖")
        axes[3].plot(d.t, d.max_attn, color=c)
    top = 10.0 ** (float(df.log10_loss.max()) + 0.3)
    _axes(axes[0], "(a) train loss", "L(W_t, u_t)", top=top, floor_fontsize=7)
    _axes(axes[1], "(b) accuracy", "accuracy\n(test solid, train dotted)", logy=False)
    _axes(axes[2], "(c) norms", "‖W_t‖_F (solid),\n‖u_t‖ (dashed)", floor_fontsize=7)
    _axes(axes[3], "(d) attention sparsity", "mean max_τ s_τ", logy=False)
    figure_legend(fig, *axes[0].get_legend_handles_labels(), ncols=3, fontsize=8)
    what = "MNIST" if meta["dataset"] == "mnist" else "digits"
    head = (
        f"[proposal] Fig 6: Φ(X) = uᵀXᵀsoftmax(XWx₁) on {what} 0 vs 1 "
        f"({meta['n_train']} train / {meta['n_test']} test, T={meta['T']}, d={meta['d']}), "
        f"joint (W, u) from 0, η grid {{{', '.join(f'{v:g}' for v in np.atleast_1d(meta['lr']))}}} "
        "(best per method "
        "solid, others dashed), PS with L* = 0"
    )
    if meta.get("stand_in"):
        head += f"\n[stand-in: {meta['stand_in']}]"
    suptitle(fig, head, fontsize=8)
    return fig
