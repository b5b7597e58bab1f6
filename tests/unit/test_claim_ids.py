"""Claim ids carry no setting value (attnbias.claims.ids): the claims of two runs whose settings
differ (steps, step sizes, layers) have the same ids, unique within each figure, and seed tables
written with the old ids are read under the present ones by the robustness table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from attnbias.claims import fastrates as fastrates_claims
from attnbias.claims import lowrank as lowrank_claims
from attnbias.claims import maxmargin as maxmargin_claims
from attnbias.claims.ids import OLD_IDS, current_id, position_names
from attnbias.claims.robustness import SEED_COLUMNS, robustness_table, with_verdicts
from attnbias.experiments import lowrank as lr
from attnbias.table.stages import run_stages


def _ids(claims) -> list[str]:
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids)), ids  # unique within the figure
    return ids


def _same_ids(a, b, *values):
    """Both runs' claims have the same ids, in the same order, and no id names a setting value."""
    ids = _ids(a)
    assert ids == _ids(b)
    assert not [i for i in ids if any(str(v) in i for v in values)], ids


MAXMARGIN = {
    "fig1": (dict(lr=0.1, inits=[1.0, 0.5, 0.0, -0.5, -1.0, -1.5]), ["fig1a", "fig1b", "fig1c"]),
    "fig2": (dict(lr=0.1, mu=0.1, radius=2.0, inside=[[2, -25], [2, 0], [2, 25], [4, 20]],
                  outside=[[2, 60], [2, 120]]), ["fig2"]),
    "fig3": (dict(lr=0.1, p0=[0.0, -1.0], v0=[-1.0, 0.0]), ["fig3a", "fig3b", "fig3c"]),
}  # fmt: skip


@pytest.mark.parametrize("group", list(MAXMARGIN))
def test_maxmargin_ids_do_not_move_with_the_steps(group):
    settings, figures = MAXMARGIN[group]
    long, short = (run_stages("maxmargin", group, dict(settings, steps=s)) for s in (1000, 500))
    for fig in figures:
        a, b = getattr(maxmargin_claims, fig)(long), getattr(maxmargin_claims, fig)(short)
        _same_ids(a, b, 1000, 500)
        # the last step is in the statement instead
        finals = {c.id: c.statement for c in b if c.id.endswith("_final")}
        assert fig == "fig3c" or finals, fig  # Fig 3(c) checks fixed steps only
        assert all("500" in s for s in finals.values()), finals


def _fig10(lrs, seeds=(0, 1)):
    rows = [
        {"method": m, "lr": eta, "seed": s, "init": 0, "t": t,
         "log10_one_minus_corr": -t / 100 * (2.0 if m == "ngd" else 1.0)}
        for eta in lrs for m in ("gd", "ngd") for s in seeds for t in (0, 100, 200)
    ]  # fmt: skip
    return pd.DataFrame(rows), {"lrs": list(lrs)}


def test_fastrates_fig10_ids_are_positions_in_the_step_size_list():
    a = fastrates_claims.fig10(_fig10([0.01, 0.1, 1.0, 10.0]))
    b = fastrates_claims.fig10(_fig10([0.03, 0.3, 3.0, 30.0]))
    _same_ids(a, b, "0.01", "0.03", "eta1", "eta3")
    assert _ids(a) == [f"ngd_beats_gd_eta_{p}" for p in ("first", "second", "third", "last")]
    assert "η = 0.3:" in b[1].statement and all(c.passed for c in a + b)
    # a shorter list keeps its first and last names
    assert _ids(fastrates_claims.fig10(_fig10([0.1, 1.0]))) == [
        "ngd_beats_gd_eta_first", "ngd_beats_gd_eta_last"]  # fmt: skip


def test_position_names():
    assert position_names(0) == [] and position_names(1) == ["first"]
    assert position_names(3) == ["first", "second", "last"]
    assert len(set(position_names(12))) == 12 and position_names(12)[-1] == "last"


FIG1 = dict(lr=0.05, init_std=0.5, seed=0, lambdas=[0, 0.2, 0.8], d=[0.2, 0.6, 1.0])


def test_lowrank_fig1_ids_do_not_move_with_the_steps():
    a = lowrank_claims.fig1(lr.compute_fig1(**FIG1, steps=1000))
    b = lowrank_claims.fig1(lr.compute_fig1(**FIG1, steps=500))
    _same_ids(a, b, 1000, 500)
    assert {"gap_final", "soft_threshold_final"} <= set(_ids(a))
    assert "t = 500" in {c.id: c for c in b}["gap_final"].statement


def _lm(layers, lams=(0.0, 1.0)):
    rows = [
        {"lam_sa": lam, "lam_mlp": 0.1, "seed": 0, "layer": layer, "head": h, "product": p,
         "eff_rank": 6.0 - 4.0 * (lam > 0), "rank_1e2": 12.0 - 8.0 * (lam > 0), "rank_1e3": 12.0,
         "ratio": 0.9}
        for lam in lams for layer in range(1, 10) for h in range(2) for p in ("kq", "pv")
    ]  # fmt: skip
    meta = {"preset": "paper", "layers_fig3": layers[:1], "layers_figC": layers}
    return pd.DataFrame(rows), meta


def _vit():
    rows = [
        {"lam_attn": lam, "lam_other": 0.1, "seed": 0, "layer": 1, "head": 0, "product": p,
         "eff_rank": e, "rank_1e2": 2 * e, "rank_1e3": 2 * e, "ratio": 0.9, "test_acc": 0.9}
        for lam, e in ((0.0, 8.0), (1.0, 3.0)) for p in ("kq", "pv")
    ]  # fmt: skip
    return pd.DataFrame(rows), {"solved_acc": 0.8}


def test_lowrank_layer_ids_are_positions_in_the_layer_list():
    quick, paper = _lm([2, 3]), _lm([7, 9])
    _same_ids(lowrank_claims.figC(quick), lowrank_claims.figC(paper), "layer2", "layer7")
    c = {x.id: x for x in lowrank_claims.figC(paper)}
    assert "LM layer 9" in c["layer_last_kq_rank_1e2_drop"].statement
    layer = {i for i, x in c.items() if x.kind == "paper"}  # (the regime checks name no layer)
    assert {i.split("_kq")[0].split("_pv")[0] for i in layer} == {"layer_first", "layer_last"}
    a, b = lowrank_claims.fig3(quick, _vit()), lowrank_claims.fig3(paper, _vit())
    _same_ids(a, b, "layer2", "layer7")
    assert "lm_layer_first_pv_median_nonincreasing" in _ids(b)


def test_current_id_maps_old_ids_and_keeps_present_ones():
    assert current_id("maxmargin", "fig1a", "cos_gmm_t1000") == "cos_gmm_final"
    assert current_id("maxmargin", "fig1a", "cos_gmm_t500") == "cos_gmm_final"
    assert current_id("maxmargin", "fig1a", "cos_gmm_t200") == "cos_gmm_t200"  # a fixed checkpoint
    assert current_id("maxmargin", "fig1b", "lmm_split_t1000") == "lmm_split_final"
    assert current_id("maxmargin", "fig2", "final_cos_t1000") == "cos_lmm_final"
    assert current_id("fastrates", "fig10", "ngd_beats_gd_eta0.1") == "ngd_beats_gd_eta_second"
    assert current_id("fastrates", "fig10", "ngd_beats_gd_eta10") == "ngd_beats_gd_eta_last"
    assert current_id("lowrank", "fig1", "soft_threshold_t1000") == "soft_threshold_final"
    assert current_id("lowrank", "figC", "layer9_pv_eff_rank_drop") == "layer_last_pv_eff_rank_drop"
    assert (current_id("lowrank", "fig3", "lm_layer5_kq_median_nonincreasing")
            == "lm_layer_first_kq_median_nonincreasing")  # fmt: skip
    # present ids, unknown ids and other figures' ids pass as they are
    for paper, fig, cid in (("lowrank", "figC", "layer_first_kq_eff_rank_drop"),
                            ("maxmargin", "fig1a", "cos_gmm_final"),
                            ("fastrates", "fig3", "loss_ngd_vs_gd_t2000"),
                            ("maxmargin", "fig5", "cos_gmm_t1000")):  # fmt: skip
        assert current_id(paper, fig, cid) == cid
    assert all(p in ("maxmargin", "fastrates", "lowrank") for p, _ in OLD_IDS)


def _seed_rows(seed, claims):
    return [
        dict.fromkeys(SEED_COLUMNS)
        | {"seed": seed, "paper": "maxmargin", "figure": "fig1a", "kind": kind, "claim": cid,
           "statement": "s", "threshold": "> 0.999", "value": "1.0", "value_num": 1.0,
           "passed": True, "outcome": "passed", "seed_outcomes": json.dumps([True]),
           "margin": 0.001, "redrawn": True}
        for cid, kind in claims
    ]  # fmt: skip


def test_a_seed_table_with_old_ids_is_read_under_the_present_ids():
    old = _seed_rows(1, [("gmm", "sanity"), ("cos_gmm_t200", "paper"), ("cos_gmm_t1000", "paper")])
    new = _seed_rows(0, [("gmm", "sanity"), ("cos_gmm_t200", "paper"), ("cos_gmm_final", "paper")])
    seeds = pd.DataFrame(new + old, columns=list(SEED_COLUMNS))
    table = robustness_table(seeds).set_index("claim")
    assert sorted(table.index) == ["cos_gmm_final", "cos_gmm_t200", "gmm"]
    assert table.loc["cos_gmm_final", "seeds"] == 2
    assert table.loc["cos_gmm_final", "verdicts"] == "0:passed 1:passed"
    v = with_verdicts(seeds)
    assert set(v.claim) == {"gmm", "cos_gmm_t200", "cos_gmm_final"}
    assert np.all(v.verdict == "passed")
