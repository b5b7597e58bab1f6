"""Shared plot style and byte-stable saving."""

from __future__ import annotations

import functools
import inspect
import os
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.textpath import TextToPath
from matplotlib.transforms import ScaledTranslation

# No pyplot: figures are made as matplotlib.figure.Figure and saved by their own canvas (Agg for
# PNG, the PDF backend for PDF), which spares every plot job pyplot's import (≈ 0.3 s) and its
# global figure registry; the rendered bytes are the same.

os.environ.setdefault("SOURCE_DATE_EPOCH", "0")

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "lines.linewidth": 1.2,
    "svg.hashsalt": "attnbias",
}
matplotlib.rcParams.update(STYLE)

# How a figure is seen: the report (Snakemake's HTML report) shows a figure's PNG at most as wide
# as its main panel, about 1,110 CSS px in a 1,600 px wide browser window: a wider PNG is scaled
# down to that width, a narrower one shown at its own size.  A text is legible there from 12 px on
# (9 pt at 96 px per inch).  The deep-learning figures are grids GRID_WIDTH inches wide (1,600 px
# at 200 dpi), on which every text of 6.23 pt or more displays at 12 px or more.
REPORT_WIDTH_PX = 1110
MIN_TEXT_PX = 12.0
GRID_WIDTH = 8.0


def displayed_px(fontsize: float, width_in: float, dpi: float | None = None) -> float:
    """The size in CSS px at which a text of ``fontsize`` points shows in the report, in a figure
    ``width_in`` inches wide saved at ``dpi`` (``savefig.dpi``): its size in the PNG
    (``fontsize × dpi / 72`` px), scaled by the report's panel width over the PNG's width where
    the PNG is wider."""
    dpi = dpi or STYLE["savefig.dpi"]
    return fontsize * dpi / 72 * min(1.0, REPORT_WIDTH_PX / (width_in * dpi))


def legible_fontsize(width_in: float, dpi: float | None = None) -> float:
    """The smallest font size (points) that shows at :data:`MIN_TEXT_PX` in the report in a figure
    ``width_in`` inches wide."""
    return MIN_TEXT_PX / displayed_px(1.0, width_in, dpi)


# Method colours used by every paper (GD blue, NGD red, Polyak green, Adam purple).
METHOD_COLORS = {
    "gd": "tab:blue",
    "sgd": "tab:blue",
    "ngd": "tab:red",
    "sngd": "tab:red",
    "polyak": "tab:green",
    "ps": "tab:green",
    "sps": "tab:green",
    "adam": "tab:purple",
}


def new_figure(
    width: float = 3.4, height: float = 3.0, ncols: int = 1, nrows: int = 1, layout=None, **kw
):
    """A figure and its axes (``fig.subplots(nrows, ncols, **kw)``); ``layout="constrained"`` for
    figures with a colour bar beside a grid of panels (else :func:`lay_out` uses tight_layout)."""
    fig = Figure(figsize=(width, height), layout=layout)
    ax = fig.subplots(nrows, ncols, **kw)
    return fig, ax


def fit_text(text: str, width_pt: float, fontsize: float, fontweight="normal") -> str:
    """``text`` with each of its lines broken at spaces (never inside ``$…$`` mathtext) so that
    no line is wider than ``width_pt`` points at ``fontsize``; a single word wider than that stays
    whole."""
    prop = FontProperties(size=fontsize, weight=fontweight)

    def width(s: str) -> float:
        return _text_path().get_text_width_height_descent(s, prop, ismath="$" in s)[0]

    def greedy(words: list[str], limit: float) -> list[str]:
        lines, current = [], ""
        for word in words:
            trial = f"{current} {word}" if current else word
            if current and width(trial) > limit:
                lines.append(current)
                current = word
            else:
                current = trial
        return [*lines, current]

    out = []
    for line in text.split("\n"):
        words = []  # the line's words, a $…$ with spaces inside kept as one
        for w in line.split(" "):
            if words and words[-1].count("$") % 2:
                words[-1] += " " + w
            else:
                words.append(w)
        lines = greedy(words, width_pt)
        if len(lines) > 1:  # as many lines, of even lengths: the narrowest limit that keeps them
            lo, hi = width_pt / len(lines), width_pt
            for _ in range(8):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if len(greedy(words, mid)) == len(lines) else (mid, hi)
            lines = greedy(words, hi)
        out += lines
    return "\n".join(out)


def suptitle(fig, text: str, fontsize: float = 9, **kw):
    """The figure's title, its lines broken to fit the figure's width (a long setting or stand-in
    name never runs off the canvas)."""
    width = 0.96 * fig.get_figwidth() * 72
    return fig.suptitle(fit_text(text, width, fontsize, kw.get("fontweight", "normal")),
                        fontsize=fontsize, **kw)  # fmt: skip


@functools.cache
def _text_path() -> TextToPath:
    return TextToPath()


FLOAT_EPS = {"float64": float(np.finfo(np.float64).eps), "float32": float(np.finfo(np.float32).eps)}


def log_floor(
    ax, floor: float | None = None, precision: str = "float64", label: str | None = None,
    side: str | None = "right", fontsize: float = 5.5,
):  # fmt: skip
    """Stop a log-y panel at a stated floor instead of running down to 10⁻³⁰⁰.

    Everything drawn on ``ax`` in data coordinates (curves, bands, error bars, bars) is clipped at
    ``floor``.  Where something was below it (a quantity that fell below what ``precision``
    resolves, or underflowed to 0), the floor is drawn as a dashed line, labelled under the line at
    the ``side`` ("right" or "left") of the panel (keep the legend away from there; ``side=None``:
    labelled in the legend, for bars, which reach below the line), and the axis starts just below
    it.  The plot-ready data are not changed (they keep their log-space values).  ``fontsize``:
    the label's (points).

    ``floor`` defaults to the resolution of ``precision`` relative to the panel: its machine
    epsilon (2.2·10⁻¹⁶ for float64) times the largest value drawn.  A quantity that has fallen
    that far below the panel's start is below what a difference of start-sized numbers
    (1 − s̄_opt, L − L*, a ratio − 1) resolves in that precision.  Call it after drawing, before
    setting ticks.  Returns the floor, or None when nothing was below it (nothing is drawn then).
    """
    artists = [a for a in (*ax.lines, *ax.collections, *ax.patches)
               if a.get_transform().contains_branch_seperately(ax.transData)[1]]  # fmt: skip
    ys = [_ys(a) for a in artists]
    values = np.concatenate([y[np.isfinite(y) & (y > 0)] for y in ys] or [np.zeros(0)])
    if floor is None:
        if not values.size:
            return None
        floor = FLOAT_EPS[precision] * float(values.max())
    below = any(bool(np.any((y < floor) | np.isneginf(y))) for y in ys)
    if not below:
        return None
    for a in artists:
        _clip_y(a, floor)
    top = ax.get_ylim()[1]
    if ax.get_autoscaley_on():  # the top autoscaled with the values below the floor: redo it
        hi = np.log10(max(float(values.max()) if values.size else floor, floor))
        top = 10.0 ** (hi + 0.05 * (hi - np.log10(floor)))
    span = np.log10(top) - np.log10(floor)
    ax.set_ylim(10.0 ** (np.log10(floor) - 0.1 * span), top)
    text = label or f"{precision} floor (ε × max)"
    ax.axhline(floor, color="0.3", ls="--", lw=0.8, zorder=1.5, label=None if side else text)
    if side:
        x, ha = (0.98, "right") if side == "right" else (0.02, "left")
        ax.text(x, floor, text, transform=ax.get_yaxis_transform(), ha=ha, va="top",
                fontsize=fontsize, color="0.25")  # fmt: skip
    return floor


def _ys(artist) -> np.ndarray:
    if isinstance(artist, Line2D):
        return np.asarray(artist.get_ydata(), dtype=float)
    if isinstance(artist, Rectangle):
        return np.array([artist.get_y() + artist.get_height()], dtype=float)
    paths = artist.get_paths() if isinstance(artist, Collection) else []
    return np.concatenate([np.asarray(p.vertices[:, 1], dtype=float) for p in paths] or [[]])


def _clip(y: np.ndarray, floor: float) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    return np.where(np.isnan(y), y, np.maximum(y, floor))  # gaps stay gaps


def _clip_y(artist, floor: float) -> None:
    if isinstance(artist, Line2D):
        artist.set_ydata(_clip(artist.get_ydata(), floor))
    elif isinstance(artist, Rectangle):  # a bar: its top at least the floor
        top = artist.get_y() + artist.get_height()
        if np.isfinite(top) and top < floor:
            artist.set_height(floor - artist.get_y())
    elif isinstance(artist, Collection):  # bands, error bars: their paths' vertices in place
        for p in artist.get_paths():
            p.vertices[:, 1] = _clip(p.vertices[:, 1], floor)
        artist.stale = True


def seed_band(df, by, column):
    """A curve over seeds: per value of the keys ``by`` (a list), ``mean``, the seed mean of
    ``column`` (each seed's mean over its rows, e.g. heads and layers), and ``min`` and ``max``,
    its range over the seeds (the band drawn around the curve; one seed: all three equal).  A
    table without a ``seed`` column is one seed."""
    seed = df["seed"] if "seed" in df.columns else 0
    per_seed = df.assign(_seed=seed).groupby([*by, "_seed"])[column].mean()
    return per_seed.groupby(level=list(range(len(by)))).agg(["mean", "min", "max"])


def draw_band(ax, x, band, color, band_alpha: float = 0.2, **kw):
    """The seed mean ``band["mean"]`` against ``x`` (keywords to ``ax.plot``) and, where the
    seeds differ, their min–max band (:func:`seed_band`)."""
    if (band["max"] > band["min"]).any():
        ax.fill_between(x, band["min"], band["max"], color=color, alpha=band_alpha, lw=0)
    return ax.plot(x, band["mean"], color=color, **kw)


def seeds_of(df) -> list[int]:
    """The seeds of a plot-ready table (column ``seed``; none: one unnamed seed, ``[]``)."""
    return sorted(int(s) for s in df["seed"].unique()) if "seed" in df.columns else []


def seeds_note(df) -> str:
    """What a curve of ``df`` shows, for a title: the mean of its seeds with their min–max band,
    or the one seed drawn."""
    seeds = seeds_of(df)
    if len(seeds) < 2:
        return f"seed {seeds[0]}" if seeds else ""
    return f"curves: mean of seeds {', '.join(map(str, seeds))}, band min–max"


def stand_in_title(ax, title: str, stand_in: str | None = None) -> None:
    """Title an axis; figures computed on stand-in data say so in the title."""
    ax.set_title(title if not stand_in else f"{title}\n[stand-in: {stand_in}]")


CONTROL_BANNER = "NEGATIVE CONTROL (--config control=null)"


def mark_control(fig, what: str = "the paper's mechanism is removed") -> None:
    """Head a figure drawn from negative-control data (``--config control=null``) with a red banner
    saying ``what`` the control removed (each paper's ``plotting.<paper>.CONTROL_NOTES``), above
    its own suptitle if it has one, so it can never pass for the real experiment."""
    old = fig._suptitle.get_text() if fig._suptitle is not None else ""
    text = f"{CONTROL_BANNER}: {what}" + ("\n" + old if old else "")
    suptitle(fig, text, fontsize=9, color="tab:red", fontweight="bold")


def mark_run(fig, label: str) -> None:
    """Head a figure of a run that is not the preset's reference run (a changed setting, a seed
    shift) with ``label`` (:meth:`attnbias.run.Run.label`: "custom: maxmargin.fig1.steps 500,
    default 1000"), above its own suptitle, so it can never pass for the reference figure."""
    old = fig._suptitle.get_text() if fig._suptitle is not None else ""
    suptitle(fig, f"[{label}]" + ("\n" + old if old else ""), fontsize=9, color="tab:purple")


def not_measurable_figure(title: str, reason: str):
    """A figure that says, instead of drawing, why its data could not be drawn (settings too small
    for what the figure shows); used only when the figure's claims are also not measurable."""
    fig, ax = new_figure(4.5, 2.0)
    ax.set_axis_off()
    ax.set_title(f"{title}: not measurable at these settings", color="tab:red")
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, fontsize=7)
    return fig


def legend_below(ax, *args, **kw):
    """A legend centred under ``ax``, below its x tick labels and x label (set them first), outside
    the data; ``args`` and ``kw`` as for ``ax.legend`` (default: no frame).  A layout engine makes
    room for it (every saved figure gets one: :func:`lay_out`)."""

    def points(size) -> float:
        return FontProperties(size=size).get_size_in_points()

    rc = matplotlib.rcParams
    offset = rc["xtick.major.size"] + rc["xtick.major.pad"] + 1.45 * points(rc["xtick.labelsize"])
    label = ax.xaxis.label
    if label.get_text():
        lines = label.get_text().count("\n") + 1
        offset += ax.xaxis.labelpad + 1.3 * lines * label.get_fontsize()
    shift = ScaledTranslation(0, -(offset + 2) / 72, ax.get_figure(root=True).dpi_scale_trans)
    kw = {"loc": "upper center", "frameon": False, "borderaxespad": 0.0, **kw}
    return ax.legend(*args, bbox_to_anchor=(0.5, 0.0), bbox_transform=ax.transAxes + shift, **kw)


def figure_legend(fig, handles, labels, loc: str = "lower center", **kw):
    """A legend of the whole figure outside its panels (``loc``: "lower center", "lower left",
    "lower right", "upper center", ...: on that side of the figure), for a figure with
    constrained layout, which makes room for it; ``kw`` as for ``fig.legend`` (default: no
    frame)."""
    return fig.legend(handles, labels, loc=f"outside {loc}", **{"frameon": False, **kw})


def lay_out(fig) -> None:
    """The layout every saved figure gets: its own layout engine where it set one (constrained
    layout), else ``tight_layout``, computed at the dpi the PNG is saved at (text extents do not
    scale exactly with the dpi: a layout made at the figure's own 100 dpi cut long tick labels by
    a few pixels in the 200-dpi file).  The text-fit test lays figures out through this too."""
    fig.set_dpi(STYLE["savefig.dpi"])
    if fig.get_layout_engine() is None:
        fig.tight_layout()


def save_figure(fig, pdf_path, png_path) -> None:
    """Save the PDF and PNG twins with reproducible bytes (no creation dates)."""
    lay_out(fig)
    Path(pdf_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(pdf_path, metadata={"CreationDate": None, "ModDate": None})
    fig.savefig(png_path, metadata={"Software": None})


def docstring_caption(func) -> str:
    """A figure's static caption when it has no ``workflow/report/<paper>_<fig>.rst``: the first
    paragraph of its plotting function's docstring, as one line."""
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())
