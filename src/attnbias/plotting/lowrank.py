"""Figures of Kobayashi, Akram, von Oswald 2024, drawn from the plot-ready data of
:mod:`attnbias.experiments.lowrank` (shared analysis: :mod:`attnbias.analysis.lowrank`).

Convention in every label: weight decay (λ/2)(‖A‖² + ‖B‖²) ≡ λ‖ABᵀ‖_*.

One public function per figure, named after it (``fig1``, ..., ``figB``), found by name by the
plot rule; its arguments are the data groups it reads (``fig3_lm``: ``results/data/lowrank/
fig3_lm.csv``), each a ``(DataFrame, meta)`` pair; it returns the matplotlib figure.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..analysis.lowrank import (
    final_rows,
    table1_summary,
)
from ..io import arr
from .lowrank_balance import NAMES, fig4, figB  # noqa: F401  (Figs 4 and B: read from here too)
from .style import (
    GRID_WIDTH,
    draw_band,
    figure_legend,
    legend_below,
    log_floor,
    new_figure,
    seed_band,
    seeds_note,
    suptitle,
)

# what the negative control (--config control=null) removes, per figure (the banner of plot.py)
_NO_DECAY = "every run trained with the swept attention weight decay at 0 (λ labels kept)"
_UNBALANCED = "heads rescaled out of balance (model unchanged), proxies trained at λ = 0"
CONTROL_NOTES = {
    "fig2": _NO_DECAY,
    "fig3": _NO_DECAY,
    "figC": _NO_DECAY,
    "table1": _NO_DECAY,
    "fig4": _UNBALANCED,
    "figB": _UNBALANCED,
}


def _lam_colors(lams):
    cmap = colormaps["viridis"]
    lams = sorted(lams)
    n = max(len(lams) - 1, 1)
    return {lam: cmap(0.9 * i / n) for i, lam in enumerate(lams)}


def _spec(row, n):
    return row[[f"s{i + 1}" for i in range(n)]].to_numpy(dtype=float)


def fig1(fig1):
    """Fig 1: GD on ‖ABᵀ − D‖² + (λ/2)(‖A‖² + ‖B‖²): loss gap, imbalance, spectra."""
    df, meta = fig1
    lams = sorted(df.lam.unique())
    col = _lam_colors(lams)
    d = arr(meta["d"])
    n = len(d)
    lr = float(meta["lr"])
    fig, axes = new_figure(11.0, 3.0, ncols=4)
    for lam in lams:
        g = df[df.lam == lam].sort_values("t")
        axes[0].semilogy(g.t, g.gap, color=col[lam], label=f"λ={lam:g}")
        axes[1].semilogy(g.t, g.imbalance, color=col[lam], label=f"λ={lam:g}")
        if lam > 0:  # the predicted rate e^{−2ηλt} through the initial imbalance
            t = g.t.to_numpy()
            axes[1].semilogy(t, g.imbalance.iloc[0] * np.exp(-2 * lr * lam * t), color=col[lam],
                             ls=":", lw=0.8)
    axes[0].set(xlabel="step t", ylabel="½(‖A‖²+‖B‖²) − ‖ABᵀ‖$_*$", ylim=(1e-14, 10),
                title="(1) gap (Frobenius bound − nuclear)")
    # below 10⁻¹⁴ the gap, a difference of O(1) sums, is float64 round-off (even negative)
    log_floor(axes[0], floor=1e-14, label="float64 round-off floor (10$^{-14}$)", side="left")
    axes[1].set(xlabel="step t", ylabel="‖AᵀA − BᵀB‖$_F$", ylim=(1e-16, 30),
                title="(2) imbalance; dotted $e^{-2\\eta\\lambda t}$")
    log_floor(axes[1])
    axes[0].legend(loc="lower right", ncol=2, bbox_to_anchor=(1, 0.1))  # above the floor
    # (3) final singular values against λ with the soft-threshold prediction
    T = int(df.t.max())
    last = df[df.t == T].sort_values("lam")
    grid = np.linspace(0, max(lams), 200)
    cmap = colormaps["tab10"]
    for i in range(n):
        axes[2].plot(grid, np.maximum(d[i] - grid / 2, 0), color=cmap(i), lw=0.8, ls="--")
    S = np.sort(np.stack([_spec(r, n) for _, r in last.iterrows()]),
                axis=1)  # ascending ↔ d ascending
    for i in range(n):
        axes[2].plot(last.lam, S[:, i], "o", color=cmap(i), ms=4, label=f"d={d[i]:g}")
    axes[2].plot([], [], "k--", lw=0.8, label="max($d_i$ − λ/2, 0)")
    axes[2].set(xlabel="λ", ylabel="singular values of ABᵀ", title=f"(3) $s_i$ at t = {T} vs λ")
    axes[2].legend(loc="upper right", ncol=1)
    # (4) trajectories at λ = 0.4 (or the grid value closest to it)
    lam4 = min(lams, key=lambda x: abs(x - 0.4))
    g = df[df.lam == lam4].sort_values("t")
    S4 = np.stack([_spec(r, n) for _, r in g.iterrows()])
    for i in range(n):
        axes[3].plot(g.t, S4[:, i], color=cmap(n - 1 - i))
        target = max(d[::-1][i] - lam4 / 2, 0)
        axes[3].axhline(target, color=cmap(n - 1 - i), ls=":", lw=0.8)
    axes[3].plot([], [], "k:", lw=0.8, label="max($d_i$ − λ/2, 0)")
    axes[3].legend(loc="upper right")
    axes[3].set_xscale("symlog", linthresh=1.0)
    axes[3].set(xlabel="step t (symlog)", ylabel="singular values of ABᵀ", xlim=(0, T),
                title=f"(4) λ = {lam4:g}: $s_i$ over training")
    suptitle(fig, f"Fig 1: ‖ABᵀ − D‖² + (λ/2)(‖A‖² + ‖B‖²), A, B ∈ ℝ$^{{{n}×{n}}}$, plain GD (η = "
                 f"{lr:g}, float64)", fontsize=9)
    return fig


OPT_STYLE = {"adam_l2": dict(ls="-", label="Adam + L2"),
             "adamw": dict(ls="--", label="AdamW (decoupled)")}


def figA(figA):
    """App. Fig. A: coupled L2 on (xᵀw − 1)², direct w against factorised w = a ⊙ b."""
    df, meta = figA
    x = arr(meta["x"])
    lams = sorted(df.lam.unique())
    col = _lam_colors(lams)
    fig, axes = new_figure(7.2, 3.4, ncols=2)
    for ax, par in zip(axes, ("direct", "factorised"), strict=True):
        grid = np.linspace(-0.1, 1.1, 10)
        ax.plot(grid, (1 - x[0] * grid) / x[1], color="0.6", lw=2, alpha=0.5, label="xᵀw = 1")
        d = df[df.parameterisation == par]
        for (opt, lam, _init), g in d.groupby(["optimizer", "lam", "init"]):
            g = g.sort_values("t")
            ax.plot(g.w1, g.w2, color=col[lam], ls=OPT_STYLE[opt]["ls"], lw=1.0)
            ax.plot(g.w1.iloc[-1], g.w2.iloc[-1], "o" if opt == "adam_l2" else "s",
                    color=col[lam], ms=4, mfc="none" if opt == "adamw" else col[lam])
        for a1, a2 in arr(meta["inits"]):
            ax.plot(a1 * a1, a2 * a2, "k^", ms=4)  # w₀ = a₀ ⊙ a₀ in both parameterisations
        for lam in lams:
            if par == "direct":
                p = 2 * x / (2 * x @ x + lam)
            else:
                p = np.array([0.0, 0.5 - lam / 8])
            ax.plot(*p, "x", color="tab:red", ms=7)
        ax.set(xlim=(-0.05, 0.75), ylim=(-0.05, 0.6), xlabel="$w_1$", ylabel="$w_2$",
               aspect="equal")
        ax.set_title("direct $w$" if par == "direct" else "factorised $w = a \\odot b$")
    handles = [Line2D([], [], color=col[lam], label=f"λ={lam:g}") for lam in lams]
    handles += [Line2D([], [], color="k", ls=s["ls"], label=s["label"]) for s in OPT_STYLE.values()]
    handles += [Line2D([], [], color="tab:red", marker="x", ls="", label="Adam+L2 prediction"),
                Line2D([], [], color="k", marker="^", ls="", label="start")]
    axes[1].legend(handles=handles, loc="upper right", fontsize=6)
    suptitle(fig, "App. Fig. A: (xᵀw − 1)², x = (1, 2); coupled L2 → ridge (direct) / ℓ1, sparse "
                 "(factorised)", fontsize=9)
    return fig


def figL(figL):
    """figL (proposal): a full-rank teacher learned by factorised products under decay."""
    df, meta = figL
    lams = arr(meta["lambdas"])
    col = _lam_colors(lams.tolist())
    n = int(meta["dim"])
    sig = arr(meta["sigma"])
    T = int(df.t.max())
    last = df[df.t == T]
    fig, axes = new_figure(10.0, 3.1, ncols=3)
    idx = np.arange(1, n + 1)
    for ax, model, pred_key, title in (
        (axes[0], "factorised", "prediction_factorised",
         "2-layer linear net W₂W₁: max(σ_i − λ/2, 0)"),
        (axes[1], "single", "prediction_single", "single matrix W: σ_i / (1 + λ/2)"),
    ):
        pred = arr(meta[pred_key])
        for j, lam in enumerate(lams):
            r = last[(last.model == model) & (last.lam == lam)].iloc[0]
            ax.plot(idx, _spec(r, n), "o", color=col[lam], ms=3.5, label=f"λ={lam:g}")
            ax.plot(idx, pred[j], "-", color=col[lam], lw=0.8)
        ax.plot(idx, sig, "k:", lw=0.8, label="teacher σ")
        ax.set(xlabel="index i", ylabel=f"singular value at t={T}", title=title)
        ax.legend(loc="upper right", fontsize=6)
    f = last[last.model == "factorised"].set_index("lam").loc[lams]
    s = last[last.model == "single"].set_index("lam").loc[lams]
    axes[2].plot(lams, f.rank_1e2, "o-", color="tab:blue", label="W₂W₁ rank@10⁻²")
    axes[2].plot(lams, f.w1_rank_1e2, "s--", color="tab:cyan", mfc="none", label="W₁ rank@10⁻²")
    axes[2].plot(lams, s.rank_1e2, "^-", color="tab:orange", label="single W rank@10⁻²")
    axes[2].plot(lams, meta["expected_rank_factorised"], "kx", ms=7, label="#{σ_i > λ/2}")
    axes[2].set(xlabel="λ", ylabel="numerical rank", title="rank vs λ", ylim=(0, n + 2))
    axes[2].legend(loc="lower left", fontsize=6)
    suptitle(fig, f"figL (proposal): full-rank teacher {n}×{n}, fresh batches, GD (η = "
                 f"{meta['lr']:g}); penalty (λ/2)‖·‖² per matrix", fontsize=9)
    return fig


IMB = {"pv": "$\\|P^{h\\top}P^h - W_V^hW_V^{h\\top}\\|_F$",
       "kq": "$\\|W_K^hW_K^{h\\top} - W_Q^hW_Q^{h\\top}\\|_F$"}


def fig2(fig2):
    """Fig 2: associative recall: rank and accuracy against λ; curves are the seed mean with the
    seeds' min–max band, the spectra those of the first seed.  Panels (a)–(f) in a 3 × 2 grid
    (legible at the report's width), (a)'s legend under it, the λ legend of (b)–(f) under the
    grid."""
    df, meta = fig2
    solved_acc = float(meta["solved_acc"])
    lr = float(meta["lr"])
    last = final_rows(df)
    lams = sorted(df.lam.unique())
    col = _lam_colors(lams)
    fig, grid = new_figure(GRID_WIDTH, 9.0, ncols=2, nrows=3, layout="constrained")
    # (a)-(f) read row by row
    axes = np.array([[grid[0, 0], grid[0, 1], grid[1, 0]], [grid[1, 1], grid[2, 0], grid[2, 1]]])
    ax = axes[0, 0]
    acc = seed_band(last[last["product"] == "pv"], ["lam"], "accuracy")
    for product, c in (("pv", "tab:blue"), ("kq", "tab:orange")):
        p = last[last["product"] == product]
        er, r2 = seed_band(p, ["lam"], "eff_rank"), seed_band(p, ["lam"], "rank_1e2")
        draw_band(ax, er.index, er, c, marker="o", label=f"{NAMES[product]} eff. rank")
        draw_band(ax, r2.index, r2, c, marker="s", ls="--", mfc="none",
              label=f"{NAMES[product]} rank@$10^{{-2}}$")  # fmt: skip
        uns = acc["mean"] < solved_acc
        ax.plot(er.index[uns], er["mean"][uns], "x", color="k", ms=8)
    d_head = int(meta["model"]["d_head"])
    ax.set(xlabel="λ (AdamW, attention matrices)",
           ylabel=f"rank, mean over heads (max {d_head})", ylim=(0, d_head + 1),
           title="(a) rank at the end vs λ")
    tw = ax.twinx()
    draw_band(tw, acc.index, acc, "tab:green", marker="d", ls=":", ms=4)
    tw.set_ylim(0, 1.05)
    tw.set_ylabel("recall accuracy (green)", color="tab:green")
    tw.grid(False)
    pv_kq = ax.get_legend_handles_labels()[0]  # PV's two ranks, then KQ's: a column each
    handles = [*pv_kq[:2],
               Line2D([], [], color="tab:green", marker="d", ls=":", ms=4,
                      label="recall accuracy (right axis)"),
               *pv_kq[2:],
               Line2D([], [], color="k", marker="x", ls="", ms=8,
                      label=f"not solved (accuracy < {solved_acc:g})")]  # fmt: skip
    legend_below(ax, handles=handles, ncols=2, fontsize=7)
    for j, product in enumerate(("pv", "kq")):
        ax = axes[0, 1 + j]
        tr = seed_band(df[df["product"] == product], ["lam", "step"], "imbalance")
        for lam in lams:
            b = tr.loc[lam]
            draw_band(ax, b.index, b, col[lam], label=f"λ={lam:g}")
            if lam > 0:
                t = b.index.to_numpy()
                ax.plot(t, b["mean"].iloc[0] * np.exp(-2 * lr * lam * t), color=col[lam],
                        ls=":", lw=0.8)  # fmt: skip
        ax.set_yscale("log")
        ax.set(xlabel="step", ylabel="imbalance, mean over heads",
               title=f"({'bc'[j]}) {IMB[product]}; dotted $e^{{-2\\eta\\lambda t}}$")
        ax.set_ylim(bottom=max(ax.get_ylim()[0], 1e-4))
    for j, product in enumerate(("pv", "kq")):
        ax = axes[1, j]
        tr = seed_band(df[df["product"] == product], ["lam", "step"], "gap")
        for lam in lams:
            b = tr.loc[lam]
            draw_band(ax, b.index, b, col[lam], label=f"λ={lam:g}")
        ax.set_yscale("log")
        ax.set(xlabel="step", ylabel="gap, mean over heads",
               title=f"({'de'[j]}) gap ½(‖A‖²+‖B‖²) − ‖ABᵀ‖$_*$ of {NAMES[product]}")
        log_floor(ax, fontsize=7)
    ax = axes[1, 2]
    seed = int(last.seed.min())  # a spectrum is one seed's
    last = last[(last["product"] == "pv") & (last.seed == seed)]
    for lam in lams:
        S = np.stack([_spec(r, d_head) for _, r in last[last.lam == lam].iterrows()])
        S = S / S[:, :1]
        ax.semilogy(np.arange(1, d_head + 1), np.median(S, axis=0), "o-", color=col[lam], ms=3,
                    label=f"λ={lam:g}")
    ax.axhline(1e-2, color="0.5", ls=":", lw=0.8)
    ax.set(xlabel="index i", ylabel="$\\sigma_i/\\sigma_1$, median over heads",
           title=f"(f) final spectra of {NAMES['pv']}, seed {seed}", ylim=(1e-5, 2))
    figure_legend(fig, *ax.get_legend_handles_labels(), ncols=min(len(lams), 6), fontsize=8,
                  title="(b)–(f): weight decay λ", title_fontsize=8)  # fmt: skip
    task, s = meta["task"], meta["settings"]
    suptitle(fig, f"Fig 2: associative recall ({s['n_pairs']} pairs, vocab {task['vocab']}), "
                 f"{s['n_layers']}-layer attention-only "
                 f"transformer (d={s['d_model']}, H={s['n_heads']}), AdamW lr {lr:g}, "
                 f"{int(df.step.max())} steps, "
                 f"{meta['preset']} preset; ✕ = not solved (accuracy < {solved_acc:g}); "
                 f"{seeds_note(df)}", fontsize=8.5)  # fmt: skip
    return fig


def _stand_in(meta) -> str | None:
    c = meta.get("corpus", {}) or {}
    return c.get("stand_in") or meta.get("stand_in")


def _lm_label(meta) -> str:
    m = meta["settings"]
    c = meta.get("corpus", {})
    tok = c.get("tokenizer", {}).get("kind", "?")
    return (f"GPT-2 LM {m['n_layer']}L×{m['n_head']}H, d={m['n_embd']}, ctx {m['ctx']}, "
            f"{tok}-level vocab {c.get('vocab_size')}, "
            f"{m['steps']} AdamW steps")  # fmt: skip


def _per_head_panel(ax, df, layer, product, lam_col="lam_sa", claimed=None):
    """Per-head rank@10⁻² (bars, one group per λ) and effective rank (dots) of one layer, of the
    first seed (a head index names no same head across seeds); ``claimed`` (``"all"`` or a list of
    layers): lines of the judged mean over those layers × heads, seed mean and band."""
    if claimed is not None:
        d = df[df["product"] == product]
        d = d if claimed == "all" else d[d.layer.isin(claimed)]
        where = ("all layers" if claimed == "all" else f"layer {', '.join(map(str, claimed))}") + (
            " × heads, seeds " + ", ".join(map(str, sorted(int(x) for x in d.seed.unique()))))
        for metric, name, ls in (("eff_rank", "eff. rank", "-"), ("rank_1e2", "rank@.01", "--")):
            band = seed_band(d, [lam_col], metric).sort_index()
            draw_band(ax, np.arange(len(band)), band, "0.15", band_alpha=0.15, ls=ls, lw=1.2,
                      label=f"claimed: mean {name}, {where}")
    seed = int(df.seed.min())
    d = df[(df.layer == layer) & (df["product"] == product) & (df.seed == seed)]
    g = d.groupby([lam_col, "head"])[["rank_1e2", "eff_rank"]].mean().reset_index()
    lams = sorted(g[lam_col].unique())
    heads = sorted(g["head"].unique())
    w = 0.8 / max(len(heads), 1)
    cmap = colormaps["tab20"]
    for j, h in enumerate(heads):
        gh = g[g["head"] == h].set_index(lam_col).loc[lams]
        x = np.arange(len(lams)) - 0.4 + (j + 0.5) * w
        ax.bar(x, gh.rank_1e2, width=w, color=cmap(j % 20), alpha=0.55, label=f"head {h}"
               if len(heads) <= 8 else None)
        ax.plot(x, gh.eff_rank, "k.", ms=3)
    ax.set_xticks(np.arange(len(lams)), [f"{x:g}" for x in lams])
    ax.set(xlabel="λ_SA (attention weight decay)",
           ylabel="rank per head\n(bars rank@$10^{-2}$, dots eff. rank)")
    ax.set_title(f"layer {layer}: {NAMES[product]}, seed {seed}")


def fig3(fig3_lm, fig3_vit):
    """Fig 3: weight decay on attention lowers the rank (GPT-2 LM left, ViT right).

    Parameters
    ----------
    fig3_lm : tuple of (DataFrame, dict)
        Per-head ranks of the language models (``results/data/lowrank/fig3_lm.csv``).
    fig3_vit : tuple of (DataFrame, dict)
        Ranks and test accuracy of the ViTs (``results/data/lowrank/fig3_vit.csv``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    (lm, lm_meta), (vit, vit_meta) = fig3_lm, fig3_vit
    layer = lm_meta["layers_fig3"][0]
    # a 2 × 2 grid (legible at the report's width): the LM's panels left, the ViT's right (KQ
    # above PV), each column's legend under it; panels in the order LM KQ, LM PV, ViT KQ, ViT PV
    fig = Figure(figsize=(GRID_WIDTH, 8.0), layout="constrained")
    grid = fig.add_gridspec(2, 2)
    axes = [fig.add_subplot(grid[i, j]) for j in range(2) for i in range(2)]
    for j, product in enumerate(("kq", "pv")):  # the lm_* claims judge every layer and head
        _per_head_panel(axes[j], lm, layer, product, claimed="all")
        axes[j].set_ylim(0, lm_meta["model"]["d_head"] + 1)
    handles, labels = axes[0].get_legend_handles_labels()
    figure_legend(fig, handles, labels, loc="lower left", ncols=1 + (len(handles) > 3),
                  fontsize=7, title="left: GPT-2 LM", title_fontsize=7)  # fmt: skip
    solved_acc = float(vit_meta["solved_acc"])
    # one test accuracy per run (every row of a run carries it): its seed mean and range
    acc = seed_band(vit.drop_duplicates(["lam_attn", "seed"]), ["lam_attn"], "test_acc")
    d_head = vit_meta["model"]["d_head"]
    for j, product in enumerate(("kq", "pv")):
        ax = axes[2 + j]
        p = vit[vit["product"] == product]
        er = seed_band(p, ["lam_attn"], "eff_rank")
        draw_band(ax, er.index, er, "tab:blue", marker="o", label="effective rank")
        draw_band(ax, er.index, seed_band(p, ["lam_attn"], "rank_1e2"), "tab:orange", marker="s",
              ls="--", mfc="none", label="rank@$10^{-2}$")  # fmt: skip
        uns = acc["mean"] < solved_acc
        ax.plot(er.index[uns], er["mean"][uns], "kx", ms=8)
        lams = er.index.to_numpy(float)
        ax.set_xscale("symlog", linthresh=max(min([x for x in lams if x > 0] or [1]), 1e-3))
        ax.set(xlabel="λ_attn (attention weight decay)",
               ylabel=f"mean rank over heads\nand layers (max {d_head})", ylim=(0, d_head + 1))
        ax.set_title(f"ViT: {NAMES[product]}")
        tw = ax.twinx()
        draw_band(tw, acc.index, acc, "tab:green", marker="d", ls=":", ms=4)
        tw.set_ylim(0, 1.05)
        tw.set_ylabel("test accuracy (green)", color="tab:green")
        tw.grid(False)
    handles = axes[2].get_legend_handles_labels()[0] + [
        Line2D([], [], color="tab:green", marker="d", ls=":", ms=4,
               label="test accuracy (right axis)"),
        Line2D([], [], color="k", marker="x", ls="", ms=8,
               label=f"accuracy < {solved_acc:g}"),
    ]  # fmt: skip
    figure_legend(fig, handles, [h.get_label() for h in handles], loc="lower right", ncols=2,
                  fontsize=7, title="right: ViT", title_fontsize=7)  # fmt: skip
    vm = dict(vit_meta["settings"], tokens=vit_meta["model"]["tokens"])
    lm_si, vit_si = _stand_in(lm_meta), _stand_in(vit_meta)
    title = (f"Fig 3: weight decay on attention lowers the rank.  Left: {_lm_label(lm_meta)}, "
             f"λ_MLP = {lm.lam_mlp.iloc[0]:g}, "
             f"layer {layer}.  Right: ViT {vm['layers']}L×{vm['heads']}H, d={vm['hidden']}, "
             f"{vm['tokens']} tokens; ✕ = accuracy < {solved_acc:g}; {seeds_note(vit)}")
    if lm_si or vit_si:
        lm_name, vit_name = lm_si or lm_meta["corpus"]["name"], vit_si or vit_meta["dataset"]
        title += f"\n[stand-ins: {lm_name}; {vit_name}]"
    suptitle(fig, title, fontsize=8.5)
    return fig


def figC(fig3_lm):
    """App. Fig. C: per-head rank of the Fig 3 language models, several layers."""
    lm, meta = fig3_lm
    layers = meta["layers_figC"]
    # a row per layer (legible at the report's width), the legend under the grid
    fig, axes = new_figure(GRID_WIDTH, 0.8 + 3.0 * len(layers), ncols=2, nrows=len(layers),
                           squeeze=False, layout="constrained")  # fmt: skip
    for i, layer in enumerate(layers):
        for j, product in enumerate(("kq", "pv")):
            ax = axes[i, j]
            _per_head_panel(ax, lm, layer, product, claimed=[layer])
            ax.set_ylim(0, meta["model"]["d_head"] + 1)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    # the claimed curves of every row: the mean over that row's layer
    labels = [x.replace(f"layer {layers[0]} ×", "the row's layer ×") for x in labels]
    figure_legend(fig, handles, labels, ncols=2, fontsize=7)
    si = _stand_in(meta)
    suptitle(fig, f"App. Fig. C: per-head rank in layers {', '.join(map(str, layers))}; "
                 f"{_lm_label(meta)}, λ_MLP = {lm.lam_mlp.iloc[0]:g}"
                 + (f"\n[stand-in: {si}]" if si else ""), fontsize=8.5)  # fmt: skip
    return fig


def table1(table1):
    """Table 1: validation perplexity over (λ_SA, λ_MLP)."""
    df, meta = table1
    t = table1_summary(df)
    sa = sorted(t.lam_sa.unique())
    mlp = sorted(t.lam_mlp.unique())
    M = t.pivot(index="lam_sa", columns="lam_mlp", values="mean").reindex(index=sa, columns=mlp)
    S = t.pivot(index="lam_sa", columns="lam_mlp", values="std").reindex(index=sa, columns=mlp)
    fig, ax = new_figure(max(5.2, 2.2 + 1.4 * len(mlp)), 1.9 + 0.55 * len(sa))
    im = ax.imshow(M.to_numpy(float), cmap="viridis_r", aspect="auto")
    for i in range(len(sa)):
        for j in range(len(mlp)):
            m, sd = M.iat[i, j], S.iat[i, j]
            if np.isfinite(m):
                ax.text(j, i, f"{m:.3f}" + (f"\n± {sd:.3f}" if np.isfinite(sd) else ""),
                        ha="center", va="center", fontsize=7,
                        color="white" if m > np.nanmean(M.to_numpy(float))
                        else "black")  # fmt: skip
    ax.set_xticks(range(len(mlp)), [f"{x:g}" for x in mlp])
    ax.set_yticks(range(len(sa)), [f"{x:g}" for x in sa])
    ax.set(xlabel="λ_MLP", ylabel="λ_SA")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="validation perplexity")
    si = _stand_in(meta)
    ax.set_title(f"Table 1: validation perplexity, mean ± std over {int(t['n'].max())} "
                 f"seeds\n({meta.get('preset')} preset"
                 + (f"; stand-in: {si.split(' (')[0]})" if si else ")"), fontsize=8)  # fmt: skip
    return fig
