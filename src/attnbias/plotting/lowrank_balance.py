"""lowrank Figs 4 and B (the balance of pretrained attention factors and of their trained proxies):
one function per figure, re-exported by :mod:`attnbias.plotting.lowrank`."""

from __future__ import annotations

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, ScalarFormatter

from .style import GRID_WIDTH, legend_below, suptitle

NAMES = {"pv": "$P^hW_V^h$", "kq": "$W_K^{h\\top}W_Q^h$"}

PRODUCT_AXES = {
    "kq": ("$\\frac{1}{2}(\\|W_Q^h\\|_F^2 + \\|W_K^h\\|_F^2)$", "$\\|W_K^{h\\top}W_Q^h\\|_*$"),
    "pv": ("$\\frac{1}{2}(\\|P^h\\|_F^2 + \\|W_V^h\\|_F^2)$", "$\\|P^hW_V^h\\|_*$"),
}


def _balance_scatter(ax, d, product):
    layers = sorted(d.layer.unique())
    cmap = colormaps["viridis"]
    n = max(len(layers) - 1, 1)
    for i, layer in enumerate(layers):  # many layers: the first and last named (viridis between)
        g = d[(d.layer == layer) & (d["product"] == product)]
        named = len(layers) <= 12 or i in (0, len(layers) - 1)
        ax.plot(g.frob_bound, g.nuclear, "o", ms=2.5, color=cmap(0.9 * i / n),
                label=f"layer {layer}" if named else None)  # fmt: skip
    g = d[d["product"] == product]
    hi = float(max(g.frob_bound.max(), g.nuclear.max())) * 1.05
    lo = float(min(g.frob_bound.min(), g.nuclear.min())) * 0.95
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
    ax.set(xlabel=f"x = {PRODUCT_AXES[product][0]}", ylabel=f"y = {PRODUCT_AXES[product][1]}")


def _proxy_panel(ax, proxies, what):
    """Median balance ratio over heads (and seeds) of the proxy runs against their λ."""
    for (fam, product), g in proxies.groupby(["family", "product"]):
        med = g.groupby("lam").ratio.median()
        ax.plot(med.index, med.values, "o-" if product == "kq" else "s--",
                label=f"{fam} {NAMES[product]}")  # fmt: skip
    ax.set(xlabel="λ (AdamW weight decay)", ylabel="median y / x over heads",
           title=f"proxies trained with known λ\n({what})")  # fmt: skip
    legend_below(ax, ncols=2, fontsize=7)


def fig4(fig4):
    """Fig 4: balance of the attention of a pretrained model."""
    df, meta = fig4
    pre = df[df.family == "pretrained"]
    proxies = df[df.family != "pretrained"]
    # a 2 × 2 grid (legible at the report's width): the two products' heads above, the histogram
    # and the proxies below (no proxies: the histogram the whole row); legends under the panels
    mosaic = [["kq", "pv"], ["hist", "proxies" if len(proxies) else "hist"]]
    fig = Figure(figsize=(GRID_WIDTH, 7.6), layout="constrained")
    panels = fig.subplot_mosaic(mosaic)
    axes = [panels[k] for k in ("kq", "pv", "hist", "proxies") if k in panels]
    for j, product in enumerate(("kq", "pv")):
        _balance_scatter(axes[j], pre, product)
        med = pre[pre["product"] == product].ratio.median()
        axes[j].set_title(f"{NAMES[product]}: per head\n(median y/x = {med:.4f})")
    legend_below(axes[0], ncols=4, fontsize=7, title="points: heads by layer (both panels)",
                 title_fontsize=7)  # fmt: skip
    ax = axes[2]
    for product, c in (("kq", "tab:blue"), ("pv", "tab:orange")):
        ax.hist(pre[pre["product"] == product].ratio, bins=30, alpha=0.6, color=c,
                label=NAMES[product])
    ax.set(xlabel="y / x = ‖ABᵀ‖$_*$ / ½(‖A‖² + ‖B‖²)", ylabel="heads",
           title="balance ratio (1 = balanced)")
    legend_below(ax, ncols=2, fontsize=7)
    if len(proxies):
        _proxy_panel(axes[3], proxies, "Fig 3 language models")
    arch = meta.get("architecture", {})
    si = meta.get("stand_in")
    suptitle(fig, f"Fig 4: balance of pretrained attention, {meta.get('model_name')} "
                 f"({arch.get('layers')} layers × {arch.get('heads')} heads)"
                 + (f"\n[stand-in: {si}]" if si else ""),
                 fontsize=8.5)  # fmt: skip
    return fig


def figB(figB):
    """App. Fig. B: balance per layer of a pretrained model."""
    df, meta = figB
    pre = df[df.family == "pretrained"]
    proxies = df[df.family != "pretrained"]
    # legible at the report's width: the two products side by side, the proxies the row below
    mosaic = [["kq", "pv"], ["proxies", "proxies"]] if len(proxies) else [["kq", "pv"]]
    fig = Figure(figsize=(GRID_WIDTH, 7.0 if len(proxies) else 3.8), layout="constrained")
    panels = fig.subplot_mosaic(mosaic)
    for product in ("kq", "pv"):
        ax = panels[product]
        layers = sorted(pre.layer.unique())
        data = [pre[(pre.layer == layer) & (pre["product"] == product)].ratio.to_numpy()
                for layer in layers]
        ax.boxplot(data, positions=layers, widths=0.6, showfliers=True, flierprops={"ms": 2})
        if len(layers) > 12:  # a tick per layer would overlap: a few integer ticks
            ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
            ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set(xlabel="layer", ylabel="y / x per head",
               title=f"{NAMES[product]}: balance ratio by layer")
    if len(proxies):
        _proxy_panel(panels["proxies"], proxies, "Fig 2 recall runs")
    si = meta.get("stand_in")
    suptitle(fig, f"App. Fig. B: balance per layer of {meta.get('model_name')}"
                 + (" and of the Fig 2 recall proxies" if len(proxies) else "")
                 + (f"\n[stand-in: {si}]" if si else ""),
                 fontsize=8.5)  # fmt: skip
    return fig
