"""lowrank regime checks (docs/papers/lowrank.md#regime-checks): each fails on a constructed table
that has not reached the regime (weight decay has not acted, a rank read at the end still moves,
the balance at λ = 0 already at the ceiling), passes on one that has, and its failure voids the
figure's paper claims in the claim file; the Fig 4 / App. B balance claims judged over seeds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from attnbias.analysis.lowrank import rank_traces, settle_change
from attnbias.claims import lowrank as lowrank_claims
from attnbias.claims.core import read_claims, write_claims
from attnbias.claims.lowrank_regime import EXPOSURE_MIN, decay_acted, settled


def _by_id(claims):
    return {c.id: c for c in claims}


def _written(tmp_path, fig, claims):
    """The claim file's records by id (verdicts and reasons as the summary shows them)."""
    write_claims(tmp_path / f"{fig}.json", "lowrank", fig, "quick", claims)
    return {c["id"]: c for c in read_claims(tmp_path / f"{fig}.json")["claims"]}


def test_the_bound_is_a_tenth_left_by_the_decay():
    assert EXPOSURE_MIN == pytest.approx(1.1513, abs=1e-4)
    assert math.exp(-2 * EXPOSURE_MIN) == pytest.approx(0.1)
    assert not decay_acted("d", "x", {0.0: 0.0, 1.0: 1.15, 3.0: 3.45}).passed
    ok = decay_acted("d", "x", {0.0: 0.0, 1.0: 1.16, 3.0: 3.48})
    assert ok.passed and ok.value == pytest.approx(1.16) and ok.kind == "regime"
    assert not decay_acted("d", "x", {0.0: 0.0}).passed  # no λ > 0: nothing compared
    assert not decay_acted("d", "x", {1.0: float("nan")}).passed  # Σ η not recorded


def test_settle_change_reads_the_last_tenth():
    steps = np.arange(0, 1801, 50)
    # t′ = 1600, the last logged step ≤ 0.9 × 1800 = 1620: |8 − 10| / 8
    v = np.where(steps >= 1800, 8.0, np.where(steps >= 1600, 10.0, 12.0))
    assert settle_change(steps, v) == pytest.approx(0.25)
    assert settle_change(steps, np.full(len(steps), 5.0)) == 0.0
    assert settle_change(steps[::-1], v[::-1]) == pytest.approx(0.25)  # any order
    assert math.isnan(settle_change([1800], [3.0]))  # nothing logged that early
    # epochs: 15 epochs, t′ = 13 (≤ 13.5), not 14
    assert settle_change(range(16), [1.0] * 14 + [2.0, 2.2]) == pytest.approx(1.2 / 2.2)
    assert not settled("s", "x", {"a": 0.01, "b": 0.051}).passed
    assert settled("s", "x", {"a": 0.01, "b": 0.05}).passed
    assert not settled("s", "x", {"a": 0.01, "b": float("nan")}).passed
    assert not settled("s", "x", {}).passed
    assert "(largest: b)" in settled("s", "x", {"a": 0.01, "b": 0.03}).statement


# ---------------------------------------------------------------------------------------------
# Fig 2


LR = 1e-3


def _recall(lams, steps, acc, tail=0.0, seeds=(0, 1, 2)):
    """Fig 2 rows (one head): the effective rank falls from 16 by λ to its final value, reached at
    0.8 T, then moves by the relative ``tail`` over the last fifth; the imbalance decays at 2ηλ."""
    rows = []
    for seed in seeds:
        for lam in lams:
            final = 14.0 / (1 + lam)
            for step in range(0, steps + 1, 50):
                e = 16.0 + (final - 16.0) * min(1.0, step / (0.8 * steps))
                if step > 0.8 * steps:
                    e = final * (1 - tail * (step - 0.8 * steps) / (0.2 * steps))
                decay = math.exp(-2 * LR * lam * step)
                for product in ("kq", "pv"):
                    rows.append({
                        "lam": lam, "seed": seed, "step": step, "layer": 1, "head": 0,
                        "product": product, "eff_rank": e, "rank_1e2": 16, "rank_1e3": 16,
                        "gap": decay / (1 + lam), "imbalance": 3.0 * decay + 1e-9,
                        "ratio": 0.9, "accuracy": acc[lam], "s1": 1.0, "s2": 0.1,
                    })  # fmt: skip
    meta = {"lr": LR, "steps": steps, "solved_acc": 0.99, "preset": "quick"}
    return pd.DataFrame(rows), meta


def test_fig2_decay_regime_covers_the_solved_lambdas_and_voids(tmp_path):
    lams = (0.0, 0.3, 1.0, 2.0)
    solved = {lam: 1.0 for lam in lams}
    # T = 3000: ηλT = 0.9 at λ = 0.3, short of ln(10)/2
    c = _by_id(lowrank_claims.fig2(_recall(lams, 3000, solved)))
    d = c["decay_acted"]
    assert d.kind == "regime" and not d.passed and d.value == pytest.approx(0.9)
    assert d.rule == "on every seed (3)" and set(d.seeds) == {"0", "1", "2"}
    assert c["rank_settled"].passed and c["rank_settled"].value == 0.0
    recs = _written(tmp_path, "fig2", list(c.values()))
    paper = [r for r in recs.values() if r["kind"] == "paper"]
    assert paper and all(r["verdict"] == "void" for r in paper)
    assert all("regime check decay_acted failed" in r["reason"] for r in paper)
    assert recs["solved_moderate_lambda"]["verdict"] == "passed"
    # λ = 0.3 not solved: the rank claims do not read it, and the decay has acted at 1 and 2
    c = _by_id(lowrank_claims.fig2(_recall(lams, 3000, {**solved, 0.3: 0.5})))
    assert c["decay_acted"].passed and c["decay_acted"].value == pytest.approx(3.0)
    recs = _written(tmp_path, "fig2", list(c.values()))
    assert recs["pv_effrank_halved"]["verdict"] != "void"
    # T = 4000: 1.2 at λ = 0.3
    assert _by_id(lowrank_claims.fig2(_recall(lams, 4000, solved)))["decay_acted"].passed


def test_fig2_rank_still_falling_at_the_end_voids(tmp_path):
    lams = (0.0, 1.0, 2.0)
    solved = {lam: 1.0 for lam in lams}
    # over the last tenth the rank moves by half the last fifth's 12 %: 6.4 % of the final value
    c = _by_id(lowrank_claims.fig2(_recall(lams, 2000, solved, tail=0.12)))
    s = c["rank_settled"]
    assert not s.passed and s.value == pytest.approx(0.06 / 0.88)
    assert c["decay_acted"].passed
    recs = _written(tmp_path, "fig2", list(c.values()))
    assert recs["pv_effrank_halved"]["verdict"] == "void"
    assert "regime check rank_settled failed" in recs["pv_effrank_halved"]["reason"]
    c = _by_id(lowrank_claims.fig2(_recall(lams, 2000, solved, tail=0.04)))
    assert c["rank_settled"].passed and c["rank_settled"].value == pytest.approx(0.02 / 0.96)


# ---------------------------------------------------------------------------------------------
# Fig 3 (LM and ViT), App. C, Table 1: the runs record Σ η and a rank trace


def _trace(final: float, counts, tail: float, layers=(1, 2)) -> list[dict]:
    """A run's rank trace: the final value from the start, except the last count, moved by the
    relative ``tail``."""
    out = []
    for i, n in enumerate(counts):
        e = final if i < len(counts) - 1 else final * (1 - tail)
        out += [{"count": n, "layer": layer, "product": p, "eff_rank": e, "rank_1e2": 2 * e}
                for layer in layers for p in ("kq", "pv")]  # fmt: skip
    return out


def _lm(ranks, lr_sum=1.0, tail=0.0, seeds=(0, 1, 2), counts=(0, 200, 400, 500, 600),
        tail_at=None):
    """LM rows (two layers, two heads) with the final ranks ``ranks`` (λ_SA → rank), and the
    gathered meta's runs: Σ η = ``lr_sum``, traces settled but for ``tail`` at ``tail_at`` (λ_SA,
    seed; every run when None)."""
    rows, runs = [], []
    for seed in seeds:
        for lam, e in ranks.items():
            rows += [{"lam_sa": lam, "lam_mlp": 0.1, "seed": seed, "layer": layer, "head": h,
                      "product": p, "eff_rank": e, "rank_1e2": 2 * e, "rank_1e3": 2 * e,
                      "ratio": 0.9, "val_ppl": 10.0 + lam + 0.01 * seed}
                     for layer in (1, 2) for h in range(2) for p in ("kq", "pv")]  # fmt: skip
            moved = tail if tail_at in (None, (lam, seed)) else 0.0
            runs.append({"lam_sa": lam, "lam_mlp": 0.1, "seed": seed, "val_ppl": 10.0 + lam,
                         "lr_sum": lr_sum, "rank_trace": _trace(e, counts, moved),
                         "unigram_ppl": 30.0, "bigram_ppl": 20.0})  # fmt: skip
    meta = {"preset": "quick", "layers_fig3": [2], "layers_figC": [1, 2], "runs": runs,
            "grid": {"lam_sa": sorted(ranks), "lam_mlp": [0.1], "seeds": list(seeds)}}
    return pd.DataFrame(rows), meta


def _vit(ranks, acc, lr_sum=0.66, tail=0.0, seeds=(0, 1, 2)):
    rows, runs = [], []
    for seed in seeds:
        for lam, e in ranks.items():
            rows += [{"lam_attn": lam, "lam_other": 0.1, "seed": seed, "layer": layer,
                      "head": h, "product": p, "eff_rank": e, "rank_1e2": 2 * e,
                      "rank_1e3": 2 * e, "ratio": 0.9, "test_acc": acc[lam]}
                     for layer in (1, 2) for h in range(2) for p in ("kq", "pv")]  # fmt: skip
            runs.append({"lam_attn": lam, "seed": seed, "test_acc": acc[lam], "lr_sum": lr_sum,
                         "rank_trace": _trace(e, range(31), tail)})  # fmt: skip
    return pd.DataFrame(rows), {"solved_acc": 0.8, "runs": runs}


LM_RANKS = {0.0: 6.0, 1.5: 4.0, 3.0: 2.0}
VIT_RANKS = {0.0: 8.0, 2.0: 5.0, 6.0: 3.0, 20.0: 1.0}
VIT_ACC = {0.0: 0.9, 2.0: 0.9, 6.0: 0.85, 20.0: 0.3}  # λ_attn = 20 unsolved


def test_rank_traces_table():
    _, meta = _lm({0.0: 6.0}, seeds=(0,))
    t = rank_traces(meta["runs"], "lam_sa")
    assert list(t.columns) == ["lam", "seed", "count", "lr_sum", "layer", "product", "eff_rank",
                               "rank_1e2"]  # fmt: skip
    assert len(t) == 5 * 2 * 2 and set(t["count"]) == {0, 200, 400, 500, 600}
    assert t.lr_sum.isna().all()  # recorded without the clock
    assert rank_traces([{"lam_sa": 0.0, "seed": 0}], "lam_sa").empty  # a run without a trace


def test_settled_reads_the_last_tenth_of_the_decay_clock():
    """An annealed lr: the last tenth of the steps (500 → 600) holds 2 % of τ = Σ η, the rank is
    flat there but fell by 20 % over the last tenth of τ (from step 400, τ = 0.9): not settled."""
    df, meta = _lm(LM_RANKS, seeds=(0,))
    clock = {0: 0.0, 200: 0.6, 400: 0.9, 500: 0.98, 600: 1.0}
    for r in meta["runs"]:
        for t in r["rank_trace"]:
            t["lr_sum"] = clock[t["count"]]
            if t["count"] <= 400:  # the rank fell from 1.25 × its final value after τ = 0.9
                t["eff_rank"] *= 1.25
    c = _by_id(lowrank_claims.fig3((df, meta), _vit(VIT_RANKS, VIT_ACC)))
    assert not c["rank_settled_lm"].passed
    assert c["rank_settled_lm"].value == pytest.approx(0.25)
    assert "decay's clock" in c["rank_settled_lm"].statement


def test_fig3_regime_checks_pass_in_the_regime():
    c = _by_id(lowrank_claims.fig3(_lm(LM_RANKS), _vit(VIT_RANKS, VIT_ACC)))
    for cid in ("decay_acted_lm", "rank_settled_lm", "decay_acted_vit", "rank_settled_vit"):
        assert c[cid].kind == "regime" and c[cid].passed, c[cid]
        assert c[cid].rule == "on every seed (3)"
    assert c["decay_acted_lm"].value == pytest.approx(1.5)  # λ_SA = 1.5 × Σ η = 1
    # the ViT's λ_attn solved on every seed: 2 and 6 (20 is not read): 2 × 0.66
    assert c["decay_acted_vit"].value == pytest.approx(1.32)
    assert "2: 1.32, 6: 3.96" in c["decay_acted_vit"].statement
    assert all(x.passed for x in c.values() if x.kind in ("paper", "regime", "sanity"))


def test_fig3_lm_not_in_the_regime_voids_the_lm_half_only(tmp_path):
    # λ_SA = 0.3 × Σ η = 1: 0.3 (the quick preset of 2026-11-30: e^{−0.6} of the imbalance left)
    ranks = {0.0: 6.0, 0.3: 5.0, 3.0: 2.0}
    c = _by_id(lowrank_claims.fig3(_lm(ranks), _vit(VIT_RANKS, VIT_ACC)))
    assert not c["decay_acted_lm"].passed and c["decay_acted_lm"].value == pytest.approx(0.3)
    assert {x.part for x in c.values() if x.id.startswith("lm_")} == {"lm"}
    assert {x.part for x in c.values() if x.id.startswith("vit_")} == {"vit"}
    recs = _written(tmp_path, "fig3", list(c.values()))
    assert recs["lm_pv_eff_rank_drop"]["verdict"] == "void"
    assert "decay_acted_lm" in recs["lm_pv_eff_rank_drop"]["reason"]
    # the figure's other half is its own experiment: judged, not voided by the LM's check
    assert recs["vit_pv_eff_rank_drop"]["verdict"] != "void"
    assert "decay_acted_lm" not in recs["vit_pv_eff_rank_drop"]["reason"]


def test_fig3_rank_still_moving_or_unlogged_fails():
    # seed 1's λ_SA = 3 moves by 8 % over the last tenth (500 → 600)
    c = _by_id(lowrank_claims.fig3(_lm(LM_RANKS, tail=0.08, tail_at=(3.0, 1)),
                                   _vit(VIT_RANKS, VIT_ACC)))  # fmt: skip
    s = c["rank_settled_lm"]
    assert not s.passed and s.value == pytest.approx(0.08 / 0.92)
    assert [r["passed"] for r in s.seeds.values()] == [True, False, True]
    assert "λ=3 seed 1" in s.statement
    # the ViT: 15 % over the last tenth of 30 epochs (t′ = 27)
    v = _by_id(lowrank_claims.fig3(_lm(LM_RANKS), _vit(VIT_RANKS, VIT_ACC, tail=0.15)))
    assert not v["rank_settled_vit"].passed
    # a run recorded without Σ η or a trace (before the checks): the checks fail, not crash
    df, meta = _lm(LM_RANKS)
    bare = dict(meta, runs=[{k: r[k] for k in ("lam_sa", "lam_mlp", "seed")} for r in meta["runs"]])
    b = _by_id(lowrank_claims.fig3((df, bare), _vit(VIT_RANKS, VIT_ACC)))
    assert not b["decay_acted_lm"].passed and not b["rank_settled_lm"].passed


def test_figC_regime_checks_each_drawn_layer(tmp_path):
    c = _by_id(lowrank_claims.figC(_lm(LM_RANKS)))
    assert c["decay_acted"].passed and c["rank_settled"].passed
    assert "24 ranks" in c["rank_settled"].statement  # 2 layers × 3 λ × 2 products × 2 measures
    bad = _by_id(lowrank_claims.figC(_lm(LM_RANKS, lr_sum=0.5)))
    assert not bad["decay_acted"].passed and bad["decay_acted"].value == pytest.approx(0.75)
    recs = _written(tmp_path, "figC", list(bad.values()))
    assert {r["verdict"] for r in recs.values() if r["kind"] == "paper"} == {"void"}


def test_table1_regime_reads_the_largest_lambda_sa(tmp_path):
    df, meta = _lm({0.0: 6.0, 0.3: 5.0, 3.0: 2.0}, lr_sum=0.5)
    c = _by_id(lowrank_claims.table1((df, meta)))
    # only the largest λ_SA is compared with 0 (the rank drop, "strong decay hurts"): 3 × 0.5
    assert c["decay_acted"].passed and c["decay_acted"].value == pytest.approx(1.5)
    assert c["rank_settled"].passed and "12 ranks" in c["rank_settled"].statement
    short = _by_id(lowrank_claims.table1(_lm({0.0: 6.0, 0.3: 5.0, 3.0: 2.0}, lr_sum=0.3)))
    assert not short["decay_acted"].passed
    recs = _written(tmp_path, "table1", list(short.values()))
    assert recs["strong_lam_sa_hurts"]["verdict"] == "void"
    assert recs["zero_lam_sa_within_best"]["verdict"] == "void"
    assert recs["cells_complete"]["verdict"] == "passed"


# ---------------------------------------------------------------------------------------------
# Fig 4, App. Fig. B: balance proxies off the ceiling, judged over seeds


def _balance(proxy: dict, family="lm", lr_sum=1.0, pretrained=(0.97, 0.99, 0.96)):
    """Pretrained heads and proxies: ``proxy`` maps (λ, seed) to the heads' ratios y/x."""
    rows = [{"family": "pretrained", "model": "m", "lam": float("nan"), "seed": float("nan"),
             "layer": 1, "head": i, "product": p, "frob_bound": 1.0, "nuclear": r, "ratio": r}
            for p in ("kq", "pv") for i, r in enumerate(pretrained)]  # fmt: skip
    runs = []
    for (lam, seed), ratios in proxy.items():
        rows += [{"family": family, "model": f"{family} λ={lam:g} seed {seed}", "lam": lam,
                  "seed": float(seed), "layer": 1, "head": i, "product": p, "frob_bound": 1.0,
                  "nuclear": r, "ratio": r} for p in ("kq", "pv") for i, r in enumerate(ratios)]
        runs.append({"lam": lam, "seed": seed, "lr_sum": lr_sum})  # fmt: skip
    return pd.DataFrame(rows), {"preset": "quick", "proxy_runs": runs}


def test_balance_at_the_ceiling_voids_and_growth_is_judged_over_seeds(tmp_path):
    # λ = 0 already balanced (median 0.98): the growth has no room
    ceiling = {(0.0, s): [0.98, 0.98, 0.99] for s in (0, 1, 2)}
    ceiling |= {(3.0, s): [0.99, 0.99, 0.995] for s in (0, 1, 2)}
    c = _by_id(lowrank_claims.fig4(_balance(ceiling)))
    assert not c["off_ceiling_lm_kq"].passed and c["off_ceiling_lm_kq"].value == 0.98
    assert c["decay_acted_lm"].passed and c["decay_acted_lm"].value == pytest.approx(3.0)
    recs = _written(tmp_path, "fig4", list(c.values()))
    assert recs["lm_kq_balance_grows"]["verdict"] == "void"
    assert recs["lm_pv_balance_grows"]["verdict"] == "void"
    assert recs["kq_bound"]["verdict"] == "passed"  # the identity is never void
    # off the ceiling (0.8): the distance from balance 0.2 → 0.05 on seeds 0 and 1, 0.2 → 0.15
    # on seed 2: seed 2 does not halve it, so the claim is inconclusive, not a pass
    room = {(0.0, s): [0.8, 0.8, 0.8] for s in (0, 1, 2)}
    room |= {(3.0, 0): [0.95] * 3, (3.0, 1): [0.95] * 3, (3.0, 2): [0.85] * 3}
    c = _by_id(lowrank_claims.fig4(_balance(room)))
    g = c["lm_kq_balance_grows"]
    assert c["off_ceiling_lm_kq"].passed and c["off_ceiling_lm_kq"].rule == "on every seed (3)"
    assert {s: r["value"] for s, r in g.seeds.items()} == pytest.approx(
        {"0": 0.25, "1": 0.25, "2": 0.75}
    )
    assert g.outcome == "inconclusive" and g.threshold == "<= 0.5"
    # the seed-mean data: every seed's heads pooled (medians 0.8 and 0.95)
    assert g.value == pytest.approx(0.25)
    room[(3.0, 2)] = [0.92] * 3  # 0.08 / 0.2 = 0.4: every seed halves it
    assert _by_id(lowrank_claims.fig4(_balance(room)))["lm_kq_balance_grows"].outcome == "passed"
    # the recall proxies of App. B with too little decay: the largest λ, 3, × Σ η = 0.25
    b = _by_id(lowrank_claims.figB(_balance(room, family="recall", lr_sum=0.25)))
    assert not b["decay_acted_recall"].passed and b["decay_acted_recall"].value == 0.75
    recs = _written(tmp_path, "figB", list(b.values()))
    assert recs["recall_kq_balance_grows"]["verdict"] == "void"


def test_balance_paper_preset_without_proxies_is_judged_once():
    df, _ = _balance({})
    c = _by_id(lowrank_claims.fig4((df, {"preset": "paper"})))
    assert set(c) == {"kq_bound", "pv_bound", "kq_median_balanced", "pv_median_balanced"}
    assert all(x.seeds is None for x in c.values()) and c["kq_median_balanced"].passed
