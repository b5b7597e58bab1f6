"""The deep-learning figures are legible in the report.

The report shows a figure's PNG at most as wide as its main panel, about 1,110 CSS px in a
1,600 px wide browser window (:data:`attnbias.plotting.style.REPORT_WIDTH_PX`): a wider PNG is
scaled down to that width.  A text of ``s`` points is ``s × dpi / 72`` px tall in the PNG (saved at
``savefig.dpi``) and shows at that times ``1110 / (the PNG's width in px)`` where the PNG is wider;
it must show at 12 px or more (9 pt at 96 px per inch; :func:`.style.displayed_px`).  A 1 × 4
strip of panels 2,900 px wide showed its tick labels at 8.5 px and its legend at 7.4 px.

Each deep-learning figure (fastrates Figs 1, 4, 6, 7; maxmargin Figs 6, 7; lowrank Figs 2, 3, 4,
B, C and Table 1) is drawn from the small plot-ready tables of ``test_figure_text_fits`` (shaped
like the real data), laid out as the plot rule saves it, and checked from the figure objects:
its width in px at the saved dpi, the displayed size of every text the renderer draws, and that
no legend covers a panel's data area or another text.  The lowrank balance and rank figures are
also drawn at the paper preset's shapes (32 layers, no proxies; 12 heads; a 4 × 4 table).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from test_figure_text_fits import LM_META, _lr_vit, drawn_texts, render

from attnbias.plotting import lowrank, new_figure
from attnbias.plotting.style import (
    GRID_WIDTH,
    MIN_TEXT_PX,
    REPORT_WIDTH_PX,
    STYLE,
    displayed_px,
    lay_out,
    legible_fontsize,
)

DPI = STYLE["savefig.dpi"]
DEEP_LEARNING = [
    *(("fastrates", f) for f in ("fig1", "fig4", "fig6", "fig7")),
    *(("maxmargin", f) for f in ("fig6", "fig7")),
    *(("lowrank", f) for f in ("fig2", "fig3", "fig4", "figB", "figC", "table1")),
]
MAX_WIDTH_PX = 1800  # shown at no less than 1110 / 1800 = 0.62 of its pixels
MAX_SHOWN_HEIGHT_PX = 1300  # about one screen of the report


def legibility_problems(fig) -> list[str]:
    """What is too small in the report, and which legend covers a panel or another text."""
    texts = drawn_texts(fig)  # drawn at the saved dpi, the figure's layout done
    width = fig.get_figwidth()
    problems = [
        f"{t.get_text()[:50]!r} at {t.get_fontsize():g} pt shows at "
        f"{displayed_px(t.get_fontsize(), width):.1f} px < {MIN_TEXT_PX:g} px"
        for t, _ in texts
        if displayed_px(t.get_fontsize(), width) < MIN_TEXT_PX - 1e-9
    ]
    renderer = FigureCanvasAgg(fig).get_renderer()
    legends = [a for a in fig.findobj(Legend) if a.get_visible()]
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    for leg in legends:
        box = leg.get_window_extent(renderer).padded(-1.0)
        name = repr(" / ".join(t.get_text() for t in leg.get_texts())[:50])
        for ax in panels:
            if box.overlaps(ax.bbox):
                problems.append(f"legend {name} covers the data area of {ax.get_title()[:40]!r}")
        inside = {id(t) for t in leg.findobj(lambda a: hasattr(a, "get_text"))}
        for t, other in texts:
            if id(t) not in inside and box.overlaps(other):
                problems.append(f"legend {name} covers the text {t.get_text()[:40]!r}")
    return problems


def _check(fig) -> None:
    lay_out(fig)
    width_px, height_px = fig.get_figwidth() * DPI, fig.get_figheight() * DPI
    assert width_px <= MAX_WIDTH_PX, f"{width_px:.0f} px wide"
    shown_height = height_px * min(1.0, REPORT_WIDTH_PX / width_px)
    assert shown_height <= MAX_SHOWN_HEIGHT_PX, f"shows {shown_height:.0f} px tall"
    problems = legibility_problems(fig)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("paper,fig", DEEP_LEARNING, ids=[f"{p}/{f}" for p, f in DEEP_LEARNING])
def test_deep_learning_figure_is_legible_in_the_report(paper, fig):
    _check(render(paper, fig))


def test_the_grids_are_the_stated_width_and_their_smallest_text_shows_at_12_px():
    # 8 in at 200 dpi: 1,600 px, shown at 1110 / 1600 of that; 6.23 pt shows at 12 px
    assert GRID_WIDTH * DPI == 1600
    assert legible_fontsize(GRID_WIDTH) == pytest.approx(12 * 72 / 200 * 1600 / 1110)
    assert displayed_px(9, GRID_WIDTH) == pytest.approx(9 * 200 / 72 * 1110 / 1600)
    assert displayed_px(9, 3.8) == pytest.approx(25.0)  # 760 px: shown at its own size
    for paper, name in (("fastrates", "fig1"), ("fastrates", "fig6"), ("lowrank", "fig3")):
        assert render(paper, name).get_figwidth() * DPI == 1600


# --- the paper preset's shapes --------------------------------------------------------------------


def _pretrained(layers: int, heads: int) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(3)
    rows = []
    for layer in range(1, layers + 1):
        for head in range(heads):
            for product in ("kq", "pv"):
                fb, r = rng.uniform(5, 40), rng.uniform(0.9, 1.0)
                rows.append(dict(family="pretrained", lam=np.nan, layer=layer, head=head,
                                 product=product, frob_bound=fb, nuclear=r * fb,
                                 ratio=r))  # fmt: skip
    meta = {"model_name": "meta-llama/Llama-2-7b-hf",
            "architecture": {"layers": layers, "heads": heads}}  # fmt: skip
    return pd.DataFrame(rows), meta


def _lm(heads: int, lam_sa=(0.0, 0.1, 0.3, 1.0), lam_mlp=(0.1,), seeds=(0,)):
    rows = []
    for sa in lam_sa:
        for mlp in lam_mlp:
            for seed in seeds:
                for layer in range(1, 13):
                    for head in range(heads):
                        for product in ("kq", "pv"):
                            rows.append(dict(
                                lam_sa=sa, lam_mlp=mlp, seed=seed, layer=layer, head=head,
                                product=product, eff_rank=50 - 20 * sa, rank_1e2=60 - 25 * sa,
                                rank_1e3=62 - 20 * sa, ratio=0.9,
                                val_ppl=20 + sa + mlp + 0.1 * seed,
                            ))  # fmt: skip
    meta = dict(LM_META, layers_fig3=[5], layers_figC=[7, 9], model={"d_head": 64},
                settings={"n_layer": 12, "n_head": heads, "n_embd": 768, "ctx": 1024,
                          "steps": 100000},
                corpus={"name": "pile", "tokenizer": {"kind": "gpt2"}, "vocab_size": 50257},
                preset="paper")  # fmt: skip
    return pd.DataFrame(rows), meta


@pytest.mark.parametrize("name", ["fig4", "figB"])
def test_balance_figures_at_the_paper_shape_are_legible(name):
    # Llama-2: 32 layers × 32 heads, no proxies (the paper preset's lm_proxies / recall_proxies)
    _check(getattr(lowrank, name)(_pretrained(32, 32)))


def test_rank_figures_at_the_paper_shape_are_legible():
    lm = _lm(heads=12)  # GPT-2 small: 12 heads (no per-head legend), d_head 64
    vit, vit_meta = _lr_vit()
    _check(lowrank.fig3(lm, (vit, vit_meta)))
    _check(lowrank.figC(lm))
    _check(lowrank.table1(_lm(12, lam_sa=(0, 0.05, 0.1, 0.2), lam_mlp=(0, 0.05, 0.1, 0.2),
                              seeds=(0, 1))))  # fmt: skip


# --- the checks can fail --------------------------------------------------------------------------


def test_the_old_strip_fails_the_checks():
    """A 1 × 4 strip 14.5 in wide (2,900 px, as the deep-learning figures were) with its legend
    inside a panel: its tick labels show at 8.5 px, its legend covers the data."""
    fig, axes = new_figure(14.5, 3.1, ncols=4)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="SGD (lr=0.1)")
        ax.set_title("(a) train loss")
    axes[0].legend(loc="center left", fontsize=7)
    lay_out(fig)
    problems = legibility_problems(fig)
    assert any("'(a) train loss' at 9 pt shows at 9.6 px" in p for p in problems)
    assert any("'SGD (lr=0.1)' at 7 pt shows at 7.4 px" in p for p in problems)
    assert any(p.startswith("legend 'SGD (lr=0.1)' covers the data area") for p in problems)
    with pytest.raises(AssertionError, match="2900 px wide"):
        _check(fig)


def test_a_legend_over_a_text_fails():
    fig, ax = new_figure(4.0, 3.0)
    ax.plot([0, 1], [0, 1], label="a curve")
    ax.set_xlabel("the x label")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9)  # on the tick labels
    lay_out(fig)
    problems = legibility_problems(fig)
    assert any(p.startswith("legend 'a curve' covers the text") for p in problems)


def test_a_compared_pair_keeps_the_suptitle_where_constrained_layout_put_it():
    """``snakemake compare`` lays the other run's figure out as the reference's (its axes' places
    copied, no layout engine): the suptitle, which constrained layout moves, goes along, else it
    overlapped the first row's titles."""
    from attnbias.plotting.compare import _laid_out_alike

    ref, other = render("lowrank", "fig3"), render("lowrank", "fig3")
    _laid_out_alike(ref, other)
    assert other._suptitle.get_position() == ref._suptitle.get_position()
    assert ref._suptitle.get_position()[1] > 0.98  # moved: the default is 0.98
    fig = other
    top = max(ax.get_position().y1 for ax in fig.axes)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    assert top < 1 and not any(fig._suptitle.get_window_extent(renderer).overlaps(t)
                               for t in titles)  # fmt: skip
