"""lowrank Fig 2 and Fig 3 (right) with several seeds: the claims judged over them
(attnbias.claims.core.over_seeds, docs/outputs.md#claims-over-seeds; the rule's choice per claim:
docs/papers/lowrank.md#seeds-and-the-rule-over-seeds) on constructed tables whose numbers are
worked out by hand, and the plots' seed mean with its min-max band."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from attnbias.claims import lowrank as lowrank_claims
from attnbias.plotting import lowrank as lowrank_plots

matplotlib.use("Agg")

LR, STEPS = 1e-3, 3000
LAMS = (0.0, 0.3, 1.0, 2.0, 3.0)


def _recall(eff: dict, acc: dict, seed: int) -> list[dict]:
    """One seed's Fig 2 rows: one head; the imbalance decays at exactly 2ηλ (every seed alike),
    the final effective rank and the accuracy per λ as given."""
    rows = []
    for lam in LAMS:
        for step in range(0, STEPS + 1, 50):
            decay = math.exp(-2 * LR * lam * step)
            for product in ("kq", "pv"):
                rows.append({
                    "lam": lam, "seed": seed, "step": step, "layer": 1, "head": 0,
                    "product": product, "eff_rank": eff[lam] if step == STEPS else 15.0,
                    "rank_1e2": 16, "rank_1e3": 16, "gap": decay + 1e-4 / (1 + lam),
                    "imbalance": 3.0 * decay + 1e-9, "ratio": 0.9, "accuracy": acc[lam],
                    "s1": 1.0, "s2": 0.1 / (1 + lam),
                })  # fmt: skip
    return rows


SOLVED = {0.0: 1.0, 0.3: 1.0, 1.0: 1.0, 2.0: 0.995, 3.0: 0.2}  # λ = 3 unsolved on every seed
EFF = {  # final effective rank per seed; seed 1 does not halve (8 / 14), seeds 0 and 2 do
    0: {0.0: 14.0, 0.3: 13.0, 1.0: 9.0, 2.0: 5.0, 3.0: 3.0},
    1: {0.0: 14.0, 0.3: 13.0, 1.0: 10.0, 2.0: 8.0, 3.0: 3.0},
    2: {0.0: 12.0, 0.3: 11.0, 1.0: 8.0, 2.0: 4.0, 3.0: 2.0},
}
META2 = {"lr": LR, "solved_acc": 0.99, "preset": "quick", "model": {"d_head": 2},
         "task": {"vocab": 32},
         "settings": {"n_pairs": 8, "n_layers": 1, "d_model": 2, "n_heads": 1}}  # fmt: skip


def _fig2(eff=EFF, acc=None):
    acc = acc or {s: SOLVED for s in eff}
    rows = [r for s in eff for r in _recall(eff[s], acc[s], s)]
    return pd.DataFrame(rows), dict(META2)


def test_fig2_paper_claims_are_resolved_only_when_every_seed_and_the_mean_agree():
    c = {x.id: x for x in lowrank_claims.fig2(_fig2())}
    halved = c["pv_effrank_halved"]
    # largest λ solved on every seed = 2: 5/14, 8/14, 4/12; the seed mean (5+8+4)/(14+14+12)
    assert {s: r["value"] for s, r in halved.seeds.items()} == pytest.approx(
        {"0": 5 / 14, "1": 8 / 14, "2": 4 / 12}
    )
    assert [r["passed"] for r in halved.seeds.values()] == [True, False, True]
    # seed 1 does not halve: the seeds disagree, so the claim is inconclusive, not a pass
    assert halved.value == pytest.approx(17 / 40) and halved.outcome == "inconclusive"
    assert halved.rule.startswith("sign test: 3 of 3 seeds agree and the seed mean with them")
    assert "at the largest λ solved on every seed (2.0)" in halved.statement
    # every seed halves: it holds
    good = {**EFF, 1: {**EFF[1], 2.0: 6.0}}
    assert {x.id: x for x in lowrank_claims.fig2(_fig2(good))}["pv_effrank_halved"].passed
    # the imbalance decays at exactly 2ηλ on every seed and on their mean
    assert c["pv_imbalance_rate"].passed and c["pv_imbalance_rate"].value == pytest.approx(
        [1.0] * 4, abs=1e-6
    )
    # sanity: on every seed
    assert c["solved_moderate_lambda"].rule == "on every seed (3)"
    assert c["solved_moderate_lambda"].passed
    assert c["solved_moderate_lambda"].value == [0.0, 0.3, 1.0, 2.0]
    assert all(x.seeds is not None for x in c.values())
    # two seeds halve (0 and 2), neither seed 1 nor the seed mean: (5 + 14 + 4) / 40 = 0.575
    worse = {**EFF, 1: {**EFF[1], 2.0: 14.0}}
    w = {x.id: x for x in lowrank_claims.fig2(_fig2(worse))}["pv_effrank_halved"]
    assert w.value == pytest.approx(23 / 40) and w.outcome == "inconclusive"
    assert [r["passed"] for r in w.seeds.values()] == [True, False, True]


def test_fig2_halving_is_read_at_one_lambda_on_every_seed():
    """Seed 2 also solves λ = 3 (its own largest solved λ): every seed and the seed mean still
    read the halving at λ = 2, the largest solved on every seed (issue: one quantity per claim)."""
    acc = {0: SOLVED, 1: SOLVED, 2: {**SOLVED, 3.0: 1.0}}
    halved = {x.id: x for x in lowrank_claims.fig2(_fig2(acc=acc))}["pv_effrank_halved"]
    assert halved.seeds["2"]["value"] == pytest.approx(4 / 12)  # at λ = 2, not 2/12 at λ = 3
    assert halved.value == pytest.approx(17 / 40)
    assert "(2.0)" in halved.statement


def test_fig2_sanity_fails_on_one_seed_and_shows_it():
    acc = {0: SOLVED, 1: SOLVED, 2: {**SOLVED, 0.0: 0.5}}  # seed 2 did not learn at λ = 0
    c = {x.id: x for x in lowrank_claims.fig2(_fig2(acc=acc))}
    s = c["solved_moderate_lambda"]
    assert not s.passed and s.value == [0.3, 1.0, 2.0]  # seed 2's value, the failing one
    assert [r["passed"] for r in s.seeds.values()] == [True, True, False]


def test_fig2_single_seed_table_is_judged_as_before():
    df, meta = _fig2()
    one = lowrank_claims.fig2((df[df.seed == 0], meta))
    assert all(x.seeds is None and x.rule is None for x in one)
    assert {x.id: x for x in one}["pv_effrank_halved"].value == pytest.approx(5 / 14)


def _vit(eff: dict, acc: dict, seed: int) -> list[dict]:
    return [
        {"lam_attn": lam, "lam_other": 0.1, "seed": seed, "layer": layer, "head": h,
         "product": product, "eff_rank": e, "rank_1e2": 2 * e, "rank_1e3": 2 * e, "ratio": 0.9,
         "test_acc": acc[lam]}
        for lam, e in eff.items() for layer in (1, 2) for h in range(2) for product in ("kq", "pv")
    ]  # fmt: skip


def _lm(seeds=(0,)) -> pd.DataFrame:
    return pd.DataFrame([
        {"lam_sa": lam, "lam_mlp": 0.1, "seed": s, "layer": 1, "head": h, "product": product,
         "eff_rank": e, "rank_1e2": e, "rank_1e3": e, "ratio": 0.9, "val_ppl": 10.0}
        for s in seeds for lam, e in ((0.0, 6.0), (3.0, 2.0 + s)) for h in range(2)
        for product in ("kq", "pv")
    ])  # fmt: skip


VIT_ACC = {0.0: 0.9, 1.0: 0.9, 3.0: 0.85, 10.0: 0.5}  # λ_attn = 10 unsolved on every seed
VIT_EFF = {  # seed 1 does not halve at the largest solved λ_attn = 3 (5 / 8)
    0: {0.0: 8.0, 1.0: 6.0, 3.0: 3.0, 10.0: 4.0},
    1: {0.0: 8.0, 1.0: 7.0, 3.0: 5.0, 10.0: 4.0},
    2: {0.0: 8.0, 1.0: 5.0, 3.0: 2.0, 10.0: 1.0},
}
LM_META = {"preset": "quick", "layers_fig3": [1], "layers_figC": [1], "model": {"d_head": 8},
           "settings": {"n_layer": 1, "n_head": 2, "n_embd": 16, "ctx": 8, "steps": 10},
           "corpus": {"name": "tweets", "tokenizer": {"kind": "char"}, "vocab_size": 40}}
VIT_META = {"solved_acc": 0.8, "dataset": "digits", "model": {"d_head": 8, "tokens": 17},
            "settings": {"layers": 2, "heads": 2, "hidden": 16}}  # fmt: skip


def _fig3_vit(eff=VIT_EFF, acc=None):
    acc = acc or {s: VIT_ACC for s in eff}
    return pd.DataFrame([r for s in eff for r in _vit(eff[s], acc[s], s)]), dict(VIT_META)


def test_fig3_vit_claims_over_seeds():
    c = {x.id: x for x in lowrank_claims.fig3((_lm(), LM_META), _fig3_vit())}
    drop = c["vit_kq_eff_rank_drop"]
    assert {s: r["value"] for s, r in drop.seeds.items()} == pytest.approx(
        {"0": 3 / 8, "1": 5 / 8, "2": 2 / 8}
    )
    # seed 1 does not halve (5/8): the seeds disagree, inconclusive whatever the mean says
    assert drop.value == pytest.approx((3 + 5 + 2) / 3 / 8) and drop.outcome == "inconclusive"
    falls = c["vit_kq_eff_rank_nonincreasing"]
    assert falls.passed and falls.value["last_over_first"] == pytest.approx(10 / 24)
    assert c["vit_solved"].passed and c["vit_solved"].rule == "on every seed (3)"
    # the LM table has one seed: its claims are judged as they were
    assert c["lm_kq_eff_rank_drop"].seeds is None and c["lm_kq_eff_rank_drop"].passed
    # one seed whose ViT never solves at λ_attn > 0: the sanity check fails, naming that seed's
    acc = {0: VIT_ACC, 1: VIT_ACC, 2: {lam: (0.9 if lam == 0 else 0.3) for lam in VIT_ACC}}
    bad = {x.id: x for x in lowrank_claims.fig3((_lm(), LM_META), _fig3_vit(acc=acc))}
    assert not bad["vit_solved"].passed and bad["vit_solved"].value == [0.0]
    # two seeds without a drop: the claim fails whatever the mean says
    flat = {**VIT_EFF, 0: {lam: 8.0 for lam in VIT_ACC}, 2: {lam: 8.0 for lam in VIT_ACC}}
    f = {x.id: x for x in lowrank_claims.fig3((_lm(), LM_META), _fig3_vit(flat))}
    assert not f["vit_kq_eff_rank_drop"].passed
    assert [r["passed"] for r in f["vit_kq_eff_rank_drop"].seeds.values()] == [False, False, False]


def test_fig3_lm_and_figC_claims_over_seeds():
    # λ_SA = 3 ends at 2, 3 and 4 against 6: ratios 1/3, 1/2, 2/3; mean 3/6
    lm = _lm(seeds=(0, 1, 2))
    c = {x.id: x for x in lowrank_claims.fig3((lm, LM_META), _fig3_vit())}
    d = c["lm_pv_eff_rank_drop"]
    assert d.value == pytest.approx(0.5) and d.outcome == "inconclusive"
    assert [r["passed"] for r in d.seeds.values()] == [True, True, False]
    cc = {x.id: x for x in lowrank_claims.figC((lm, LM_META))}
    drop = cc["layer_first_kq_rank_1e2_drop"]
    assert drop.value == pytest.approx(0.5)
    assert drop.rule.startswith("sign test: 3 of 3 seeds agree and the seed mean")


def _band_collections(ax):
    return [c for c in ax.collections if len(c.get_paths())]


def test_fig2_plot_draws_the_seed_mean_and_its_band():
    df, meta = _fig2()
    fig = lowrank_plots.fig2((df, meta))
    ax = fig.axes[0]
    # panel (a): the PV effective-rank curve is the seed mean, its band the seeds' min-max
    line = next(x for x in ax.lines if "eff. rank" in x.get_label() and "P^h" in x.get_label())
    assert line.get_ydata()[3] == pytest.approx((5 + 8 + 4) / 3)
    # its band (drawn first): the seeds' least and largest final rank per λ
    ys = _band_collections(ax)[0].get_paths()[0].vertices[:, 1]
    assert sorted(set(np.round(ys, 9))) == [2.0, 3.0, 4.0, 8.0, 10.0, 11.0, 12.0, 13.0, 14.0]
    assert "band min–max" in fig._suptitle.get_text().replace("\n", " ")
    assert fig.axes[5].get_title().endswith("seed 0")  # the spectra: one seed, named
    # the imbalance decays alike on every seed here: its curves have no band (nothing to span)
    assert not _band_collections(fig.axes[1])


def test_fig3_plot_draws_the_vit_band():
    fig = lowrank_plots.fig3((_lm(seeds=(0, 1, 2)), LM_META), _fig3_vit())
    ax = fig.axes[2]  # ViT, W_K^T W_Q
    line = next(x for x in ax.lines if x.get_label() == "effective rank")
    assert line.get_ydata()[2] == pytest.approx(10 / 3)  # λ_attn = 3: (3 + 5 + 2) / 3
    ys = _band_collections(ax)[0].get_paths()[0].vertices[:, 1]  # its band: λ_attn = 3 spans 2-5
    assert ys.min() == pytest.approx(1.0) and ys.max() == pytest.approx(8.0)
    assert {2.0, 5.0} <= set(np.round(ys, 9))
    assert "band min–max" in fig._suptitle.get_text().replace("\n", " ")


def test_fig3_and_figC_lm_panels_draw_what_their_claims_measure():
    """The per-head bars are one seed's (seed 0); the lm_* claims judge the mean over every layer
    and head over the seeds: that curve is drawn over the bars, with its seed band (issue:
    figures draw what their claims measure)."""
    lm = _lm(seeds=(0, 1, 2))  # λ_SA = 3 ends at 2, 3, 4 against 6 on every head
    fig = lowrank_plots.fig3((lm, LM_META), _fig3_vit())
    ax = fig.axes[0]  # LM, W_K^T W_Q
    label = "claimed: mean eff. rank, all layers × heads, seeds 0, 1, 2"
    line = next(x for x in ax.lines if x.get_label() == label)
    assert line.get_ydata() == pytest.approx([6.0, 3.0])  # the seed mean at λ_SA = 0, 3
    ys = _band_collections(ax)[0].get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(2.0) and ys.max() == pytest.approx(6.0)
    figc = lowrank_plots.figC((lm, LM_META))
    assert any(x.get_label() == "claimed: mean eff. rank, layer 1 × heads, seeds 0, 1, 2"
               for x in figc.axes[0].lines)  # fmt: skip
