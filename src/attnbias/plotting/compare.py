"""A figure of a run beside the same figure of the reference run (``snakemake compare``), drawn so
that what moved shows.

The figure is redrawn by its own plotting function from both runs' plot-ready data on **shared
axes**: each panel's limits span both runs' own views and every curve, point, band and bar of
both (a straight guide line, two points, only where it differs between the runs), so no data leave
the axes.  The picture (:func:`figure_pair`) has three parts:

1. the reference run and this run, each as drawn on the shared axes (original colours);
2. the two **overlaid**: what both runs draw alike in gray, what only the reference draws in orange,
   what only this run draws in blue — a panel drawn the same in both runs says so;
3. **the claims**: one row per claim, its value in the reference run (orange dot) and in this run
   (blue square, an arrow between them) on the row's own scale, its threshold (black tick, the
   passing side shaded green) and both verdicts.

Where the figure cannot be redrawn (its data missing or not measurable, or panels or sizes that
differ between the runs), its two rendered PNGs are shown side by side instead, and the picture
says why.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path

import numpy as np

from ..io import load_data, not_measurable_reason, short_number
from .style import STYLE, lay_out, new_figure

REFERENCE = "#d95f02"  # what only the reference run draws
OTHER = "#1b63c6"  # what only this run draws
SAME = 0.62  # the gray of what both draw alike
PASSING = "#cfe8cf"  # the passing side of a threshold
WIDTH = 8.0  # inches
DPI = STYLE["savefig.dpi"]  # the figures' own resolution: a redrawn figure keeps its size
TITLE = 0.32  # inches above an image for its title
_OP = re.compile(r"^\s*(>=|<=|>|<|≥|≤)\s*([-+−]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
MAX_ROWS = 30


# --- redrawing on shared axes -----------------------------------------------------------------


def run_of(png) -> tuple[Path, str, str]:
    """(results folder, paper, figure) of a figure ``<folder>/figures/<paper>/<fig>.png``."""
    png = Path(png)
    return png.parents[2], png.parent.name, png.stem


def redraw(folder, paper: str, figure: str):
    """The figure drawn again by ``attnbias.plotting.<paper>.<figure>`` from the plot-ready data in
    ``folder`` (``<folder>/data/<paper>/<group>.csv``, the groups the function takes), or the reason
    it cannot be (a string)."""
    import importlib

    fn = getattr(importlib.import_module(f"attnbias.plotting.{paper}"), figure, None)
    if not callable(fn):
        return f"no plotting function {paper}.{figure}"
    data = {}
    for group in inspect.signature(fn).parameters:
        csv = Path(folder) / "data" / paper / f"{group}.csv"
        if not csv.exists():
            return f"no plot-ready data {csv}"
        data[group] = load_data(csv)
        if not_measurable_reason(data[group][1]):
            return f"not measurable in {folder}"
    try:
        return fn(**data)
    except Exception as e:  # noqa: BLE001 - a figure that cannot be redrawn is shown as rendered
        return f"not redrawn ({type(e).__name__}: {e})"


def _panels(fig) -> list:
    """The panels whose limits are shared: rectilinear axes that are not colour bars."""
    return [ax for ax in fig.axes if ax.name == "rectilinear" and not hasattr(ax, "_colorbar")]


def _artists(ax) -> dict[str, list]:
    return {"lines": list(ax.lines), "collections": list(ax.collections),
            "patches": list(ax.patches)}  # fmt: skip


def _points(artist, ax) -> np.ndarray | None:
    """An artist's points in data coordinates (n × 2), or None when it is not drawn in them."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon, Rectangle

    if isinstance(artist, Line2D):
        if artist.get_transform() is not ax.transData:
            return None
        return np.asarray(artist.get_xydata(), dtype=float).reshape(-1, 2)
    if isinstance(artist, Collection):
        offsets = np.asarray(artist.get_offsets(), dtype=float).reshape(-1, 2)
        if len(offsets) and artist.get_offset_transform() is ax.transData:
            return offsets
        if artist.get_transform() is ax.transData and artist.get_paths():
            return np.concatenate([p.vertices for p in artist.get_paths()]).reshape(-1, 2)
        return None
    if isinstance(artist, Rectangle) and artist.get_data_transform() is ax.transData:
        x, y, w, h = artist.get_x(), artist.get_y(), artist.get_width(), artist.get_height()
        return np.array([[x, y], [x + w, y + h]], dtype=float)
    if isinstance(artist, Polygon) and artist.get_data_transform() is ax.transData:
        return np.asarray(artist.get_xy(), dtype=float).reshape(-1, 2)
    return None


def _is_data(artist, pts) -> bool:
    """Whether an artist carries data (kept in view whatever the other run draws): a curve of three
    points or more, a scatter or band, a bar; not a straight guide line or a filled region."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    if isinstance(artist, Line2D):
        return len(pts) >= 3
    return not isinstance(artist, Polygon)


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, equal_nan=True))


def _span(lo, hi, values, scale: str) -> tuple[float, float]:
    """(lo, hi) widened to hold ``values`` (finite; positive on a log scale), with a margin of 4 %
    of the span (in the scale's coordinates) on each side that had to widen."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if scale == "log":
        v = v[v > 0]
    if not len(v) or (v.min() >= lo and v.max() <= hi):
        return lo, hi
    f, inv = (np.log10, lambda x: 10.0**x) if scale == "log" else (float, float)
    a, b = f(min(lo, v.min())), f(max(hi, v.max()))
    pad = 0.04 * (b - a if b > a else 1.0)
    return (inv(a - pad) if v.min() < lo else lo), (inv(b + pad) if v.max() > hi else hi)


def share_axes(ref_fig, other_fig) -> bool:
    """Give each panel of the two figures the same limits, which hold both runs' views, every data
    artist of both (:func:`_is_data`) and every artist that differs between them; return whether
    anything drawn differs.  The figures must have the same panels (:func:`_panels`); their
    artists are paired by their place in each panel's lines, collections and patches."""
    differs = False
    for ra, oa in zip(_panels(ref_fig), _panels(other_fig), strict=True):
        keep = []
        for kind, ref_artists in _artists(ra).items():
            other_artists = _artists(oa)[kind]
            for i in range(max(len(ref_artists), len(other_artists))):
                pair = [(art, _points(art, ax)) for arts, ax in ((ref_artists, ra),
                                                                 (other_artists, oa))
                        for art in arts[i:i + 1]]  # fmt: skip
                pair = [(art, pts) for art, pts in pair if pts is not None and len(pts)]
                if not pair:  # drawn in no data coordinates in either run (text, legend boxes)
                    continue
                changed = len(pair) == 1 or not _same(pair[0][1], pair[1][1])
                differs |= changed
                keep += [pts for art, pts in pair if changed or _is_data(art, pts)]
        pts = np.concatenate(keep) if keep else np.empty((0, 2))
        for col, get, put, scale in ((0, "get_xlim", "set_xlim", ra.get_xscale()),
                                     (1, "get_ylim", "set_ylim", ra.get_yscale())):  # fmt: skip
            lims = [*getattr(ra, get)(), *getattr(oa, get)()]
            inverted = lims[0] > lims[1]
            lo, hi = _span(min(lims), max(lims), pts[:, col], scale)
            for ax in (ra, oa):
                getattr(ax, put)((hi, lo) if inverted else (lo, hi))
    return differs


def _render(fig, dpi: float = DPI) -> np.ndarray:
    """The figure as an RGB array (0–1, float32) at ``dpi``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].astype(np.float32) / 255.0


def render_dpi(fig) -> float:
    """The resolution a redrawn figure is rendered at: its own (``DPI``), or less for a figure
    wider than the picture (``WIDTH``), which shows it at most that wide."""
    return min(DPI, WIDTH * DPI / fig.get_size_inches()[0])


def _laid_out_alike(ref_fig, other_fig) -> None:
    """Lay out the reference figure as every saved figure is (:func:`lay_out`), and give the
    other's axes the same places, so that the two renders overlay pixel for pixel."""
    lay_out(ref_fig)
    if ref_fig.get_layout_engine() is not None:  # it places the axes when the figure is drawn
        _render(ref_fig, render_dpi(ref_fig))
    other_fig.set_layout_engine("none")
    for ra, oa in zip(ref_fig.axes, other_fig.axes, strict=True):
        oa.set_position(ra.get_position(original=True))
    if ref_fig._suptitle is not None and other_fig._suptitle is not None:  # constrained layout
        other_fig._suptitle.set_position(ref_fig._suptitle.get_position())  # moves it too


def crop(*images: np.ndarray, margin: int = 12) -> list[np.ndarray]:
    """The images (of one size) cut to the box that holds every pixel not white in any of them,
    plus ``margin`` pixels: the same box for all, so that they still overlay."""
    ink = np.zeros(images[0].shape[:2], dtype=bool)
    for img in images:
        ink |= img.min(axis=2) < 0.97
    if not ink.any():
        return list(images)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    r0, r1 = max(rows[0] - margin, 0), min(rows[-1] + margin + 1, ink.shape[0])
    c0, c1 = max(cols[0] - margin, 0), min(cols[-1] + margin + 1, ink.shape[1])
    return [img[r0:r1, c0:c1] for img in images]


def overlay(ref_img: np.ndarray, other_img: np.ndarray) -> tuple[np.ndarray, float]:
    """The two renders composed: ink both have alike in gray, the reference's alone in orange, this
    run's alone in blue; and the share of pixels that differ."""
    ink_r, ink_o = 1 - ref_img.min(axis=2), 1 - other_img.min(axis=2)
    same = np.minimum(ink_r, ink_o)[..., None]
    only_r, only_o = ink_r[..., None] - same, ink_o[..., None] - same
    from matplotlib.colors import to_rgb

    ref, oth = np.asarray(to_rgb(REFERENCE)), np.asarray(to_rgb(OTHER))
    out = 1 - same * (1 - SAME) - only_r * (1 - ref) - only_o * (1 - oth)
    return np.clip(out, 0, 1), float((np.abs(ink_r - ink_o) > 0.1).mean())


# --- the claims -------------------------------------------------------------------------------


def _claims(folder, paper: str, figure: str) -> dict[str, dict]:
    path = Path(folder) / "claims" / paper / f"{figure}.json"
    return {c["id"]: c for c in json.loads(path.read_text())["claims"]} if path.exists() else {}


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _threshold(text) -> tuple[str, float] | None:
    m = _OP.match(str(text))
    return (m.group(1), float(m.group(2).replace("−", "-"))) if m else None


def _short(v: float | None, against: float | None = None, digits: int = 4) -> str:
    """:func:`attnbias.io.short_number`, "—" for a missing value."""
    return "—" if v is None else short_number(v, against, digits)


def _pair(ref: float | None, other: float | None, against: float | None) -> tuple[str, str]:
    """Both values by :func:`_short`, with more digits (up to 8) where two values that differ
    would read the same."""
    for digits in range(4, 9):
        a, b = _short(ref, against, digits), _short(other, against, digits)
        if a != b or ref == other or ref is None or other is None:
            break
    return a, b


def claim_rows(reference: dict, other: dict) -> tuple[list[dict], list[str]]:
    """The claims drawn (paper claims, positive controls and regime checks, and any other whose
    verdict or value changed) with a number in either run, this run's order first; and the ids
    not drawn (no number: a list, a word)."""
    rows, skipped = [], []
    for cid in [*other, *(i for i in reference if i not in other)]:
        r, o = reference.get(cid, {}), other.get(cid, {})
        c = o or r
        ref_v, oth_v = _number(r.get("value")), _number(o.get("value"))
        changed = bool(r) and bool(o) and r.get("verdict") != o.get("verdict")
        moved = ref_v is not None and oth_v is not None and ref_v != oth_v
        if c["kind"] not in ("paper", "control", "regime") and not (changed or moved):
            continue
        if ref_v is None and oth_v is None:
            skipped.append(cid)
            continue
        rows.append(dict(id=cid, kind=c["kind"], ref=ref_v, other=oth_v,
                         threshold=_threshold(c["threshold"]), threshold_text=str(c["threshold"]),
                         ref_verdict=r.get("verdict", ""), other_verdict=o.get("verdict", ""),
                         changed=changed))  # fmt: skip
    return rows, skipped


def draw_claims(ax, rows: list[dict], skipped: list[str]) -> None:
    """One row per claim (:func:`claim_rows`), each on its own scale spanning its two values and
    its threshold: the passing side shaded, the threshold a black tick, the reference's value an
    orange dot, this run's a blue square, an arrow from one to the other; the id on the left (bold
    where the verdict changed), the values, threshold and verdicts on the right."""
    x0, x1 = 0.35, 0.64
    shown, rest = rows[:MAX_ROWS], len(rows) - MAX_ROWS
    ax.set_xlim(0, 1)
    ax.set_ylim(len(shown) - 0.4 + (0.8 if rest > 0 or skipped else 0), -1.3)
    ax.set_axis_off()
    ax.text(x0 - 0.01, -1, "claim (kind)", ha="right", va="center", fontsize=7, color="0.3")
    ax.text((x0 + x1) / 2, -1, "reference ●  → this run ■  (green: passes)", ha="center",
            va="center", fontsize=7, color="0.3")  # fmt: skip
    ax.text(x1 + 0.01, -1, "reference → this run (threshold): verdicts", ha="left", va="center",
            fontsize=7, color="0.3")  # fmt: skip
    for i, r in enumerate(shown):
        thr = r["threshold"]
        vals = [v for v in (r["ref"], r["other"], thr[1] if thr else None)
                if v is not None and math.isfinite(v)]  # fmt: skip
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        pad = (hi - lo) * 0.1 if hi > lo else max(abs(hi) * 0.01, 1e-9)
        lo, hi = lo - pad, hi + pad

        def at(v, lo=lo, hi=hi):
            return x0 + (x1 - x0) * (v - lo) / (hi - lo)

        ax.plot([x0, x1], [i, i], color="0.88", lw=7, solid_capstyle="butt")
        if thr:
            t = at(thr[1])
            side = (t, x1) if thr[0] in (">", ">=", "≥") else (x0, t)
            ax.plot(side, [i, i], color=PASSING, lw=7, solid_capstyle="butt")
            ax.plot([t, t], [i - 0.32, i + 0.32], color="k", lw=1.1)
        fin = {k: r[k] for k in ("ref", "other") if r[k] is not None and math.isfinite(r[k])}
        if len(fin) == 2 and fin["ref"] != fin["other"]:
            ax.annotate("", xy=(at(fin["other"]), i), xytext=(at(fin["ref"]), i),
                        arrowprops=dict(arrowstyle="->", color="0.25", lw=0.9,
                                        shrinkA=3, shrinkB=3))  # fmt: skip
        if "ref" in fin:
            ax.plot(at(fin["ref"]), i, "o", color=REFERENCE, ms=5.5, zorder=3)
        if "other" in fin:
            ax.plot(at(fin["other"]), i, "s", color=OTHER, ms=4.5, zorder=4)
        weight = "bold" if r["changed"] else "normal"
        ax.text(x0 - 0.01, i, f"{r['id']} ({r['kind']})", ha="right", va="center", fontsize=7,
                weight=weight)  # fmt: skip
        against = thr[1] if thr else None
        verdicts = (f"{r['ref_verdict'] or '—'} → {r['other_verdict'] or '—'}"
                    if r["changed"] or not r["ref_verdict"] else r["other_verdict"])  # fmt: skip
        thr_text = f" ({r['threshold_text']})" if thr else ""
        a, b = _pair(r["ref"], r["other"], against)
        ax.text(x1 + 0.01, i, f"{a} → {b}{thr_text}: {verdicts}", ha="left", va="center",
                fontsize=6.5,
                weight=weight, color="#b00020" if r["changed"] else "k")  # fmt: skip
    notes = ([f"… and {rest} more claims (compare.md)"] if rest > 0 else []) + (
        [f"not drawn (not a number): {', '.join(skipped)}"] if skipped else [])
    if notes:
        ax.text(0.0, len(shown) + 0.1, "; ".join(notes), ha="left", va="center", fontsize=6.5,
                color="0.3")  # fmt: skip


# --- the picture ------------------------------------------------------------------------------


def _image(fig, rect, img, title, color="k") -> None:
    ax = fig.add_axes(rect)
    ax.set_axis_off()
    ax.set_title(title, fontsize=8, color=color)
    if img is None:
        ax.text(0.5, 0.5, "not built in the reference run", ha="center", va="center",
                transform=ax.transAxes, fontsize=8)  # fmt: skip
    else:
        ax.imshow(img, interpolation="lanczos")


def _row(items, fit: float, dpi: float):
    """A block of :func:`_stack`: the images of ``items`` ((image, title, title colour)) side by
    side in equal columns, each at its own size (rendered at ``dpi``) or smaller to fit ``fit``
    inches, its title above it."""
    img = next(i for i, _, _ in items if i is not None)
    w, h = img.shape[1] / dpi, img.shape[0] / dpi
    scale = min(1.0, fit / w)
    w, h = w * scale, h * scale
    height = h + TITLE

    def draw(fig, bottom, share):
        for k, (image, title, colour) in enumerate(items):
            centre = (k + 0.5) / len(items)
            _image(fig, [centre - w / WIDTH / 2, bottom, w / WIDTH, share * h / height], image,
                   title, colour)  # fmt: skip

    return height, draw


def _stack(blocks) -> object:
    """A figure of ``WIDTH`` inches holding ``blocks`` top to bottom: (height in inches, draw),
    ``draw(fig, bottom, height)`` placing its axes in figure fractions."""
    total = sum(h for h, _ in blocks)
    fig, ax = new_figure(WIDTH, total)
    ax.remove()
    top = total
    for h, draw in blocks:
        top -= h
        draw(fig, top / total, h / total)
    return fig


def pair_parts(reference_png, other_png) -> dict:
    """What :func:`figure_pair` draws for a figure of two runs, read from the PNGs' paths
    (``<folder>/figures/<paper>/<fig>.png``, :func:`run_of`) and those folders' plot-ready data and
    claim files: ``reference`` and ``other`` (the two pictures, RGB: redrawn on shared axes and
    cropped alike, or as rendered; ``reference`` None where it was not built), ``overlay`` (their
    composition, :func:`overlay`, or None), ``moved`` (the share of pixels that differ),
    ``differs`` (whether any drawn artist differs), ``note`` (why the figure was not redrawn, or
    "") and the claims' ``rows`` and ``skipped`` (:func:`claim_rows`)."""
    import matplotlib.image as mpimg

    (ref_dir, paper, figure), (oth_dir, _, _) = run_of(reference_png), run_of(other_png)
    have_ref = Path(reference_png).exists()
    ref_fig = redraw(ref_dir, paper, figure) if have_ref else "not built in the reference run"
    oth_fig = redraw(oth_dir, paper, figure)
    rows, skipped = claim_rows(_claims(ref_dir, paper, figure), _claims(oth_dir, paper, figure))
    parts = dict(overlay=None, moved=0.0, differs=False, note="", rows=rows, skipped=skipped,
                 dpi=DPI)  # fmt: skip
    if isinstance(ref_fig, str) or isinstance(oth_fig, str):
        parts["note"] = next(x for x in (oth_fig, ref_fig) if isinstance(x, str))
    elif len(_panels(ref_fig)) != len(_panels(oth_fig)) or len(ref_fig.axes) != len(
        oth_fig.axes
    ) or tuple(ref_fig.get_size_inches()) != tuple(oth_fig.get_size_inches()):
        parts["note"] = "the runs' figures have different panels: not overlaid"
    if parts["note"]:  # the rendered pictures, as they are
        ref_img = mpimg.imread(reference_png)[..., :3] if have_ref else None
        return {**parts, "reference": ref_img, "other": mpimg.imread(other_png)[..., :3]}
    try:
        differs = share_axes(ref_fig, oth_fig)
        _laid_out_alike(ref_fig, oth_fig)
        dpi = render_dpi(ref_fig)
        ref_img, oth_img = crop(_render(ref_fig, dpi), _render(oth_fig, dpi))
    except Exception as e:  # noqa: BLE001 - a figure these helpers cannot lay out: as rendered
        parts["note"] = f"not overlaid ({type(e).__name__}: {e})"
        ref_img = mpimg.imread(reference_png)[..., :3]
        return {**parts, "reference": ref_img, "other": mpimg.imread(other_png)[..., :3]}
    over, moved = overlay(ref_img, oth_img)
    return {**parts, "reference": ref_img, "other": oth_img, "overlay": over, "moved": moved,
            "differs": differs, "dpi": dpi}  # fmt: skip


def figure_pair(reference_png, other_png, reference_title: str, other_title: str, out_png) -> None:
    """Write ``out_png`` (and its PDF): the reference run's figure and this run's, what moved
    between them and how their claims moved (see the module's docstring, :func:`pair_parts`)."""
    parts = pair_parts(reference_png, other_png)
    ref_img, oth_img, note = parts["reference"], parts["other"], parts["note"]
    rows, skipped = parts["rows"], parts["skipped"]
    pair = [(ref_img, reference_title, REFERENCE), (oth_img, other_title, OTHER)]
    dpi = parts["dpi"]
    width = oth_img.shape[1] / dpi
    if 2 * width + 0.3 <= WIDTH:
        blocks = [_row(pair, WIDTH / 2, dpi)]
    else:
        blocks = [_row(pair[:1], WIDTH, dpi), _row(pair[1:], WIDTH, dpi)]
    if parts["overlay"] is not None and parts["differs"] and parts["moved"] > 0:
        what = ("What moved: gray is drawn alike in both runs, orange only in the reference run, "
                "blue only in this run (shared axes).")  # fmt: skip
        blocks.append(_row([(parts["overlay"], what, "k")], WIDTH, dpi))
    else:
        text = (f"Not redrawn: {note}." if note else
                "Drawn the same in both runs (on shared axes): what changed is not in the "
                "drawing; the claims below show how their values moved.")  # fmt: skip
        blocks.append((0.4, lambda fig, b, hh: fig.text(0.5, b + hh / 2, text, ha="center",
                                                        va="center", fontsize=8)))  # fmt: skip
    n = min(len(rows), MAX_ROWS)
    if rows or skipped:
        h = 0.27 * (n + 2) + (0.3 if len(rows) > MAX_ROWS or skipped else 0)
        blocks.append((h, lambda fig, b, hh: draw_claims(
            fig.add_axes([0.02, b, 0.96, hh]), rows, skipped)))
    fig = _stack(blocks)
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(out_png).with_suffix(".pdf"), metadata={"CreationDate": None, "ModDate": None})
    fig.savefig(out_png, metadata={"Software": None})
