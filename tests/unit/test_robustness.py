"""The robustness table over seeds (attnbias.claims.robustness): margins, statuses, counts."""

import json
import math

import pandas as pd
import pytest

from attnbias.claims.core import compare, holds, within, write_claims
from attnbias.claims.robustness import (
    check_examined,
    figure_notes,
    figure_summary,
    headline,
    margin,
    robustness_table,
    seed_table,
    with_verdicts,
    write_robustness,
)
from attnbias.layout import execution_options
from attnbias.workflow import SEED_STRIDE, shift_seeds


def test_margin_of_comparisons_is_signed_and_relative():
    assert margin(0.9995, "> 0.999") == pytest.approx(0.0005 / 0.9995)
    assert margin(0.4, "< 0.5") == pytest.approx(0.2)
    assert margin(0.64, "< 0.5") == pytest.approx(-0.14 / 0.64)
    assert margin(-1.0, "> 0") == -1.0
    assert margin(3, ">= 3") == 0.0
    assert math.isnan(margin([1, 2], "> 0"))
    assert math.isnan(margin(True, "true"))
    assert math.isnan(margin(float("nan"), "> 0"))


def test_margin_of_a_tolerance_uses_the_recorded_error():
    c = within("x", "s", [1.0, 2.0], [1.0, 2.0005], 1e-3, kind="sanity")
    assert margin(c.value, c.threshold) == pytest.approx(0.5, rel=1e-6)
    bad = within("x", "s", [1.0], [1.1], 1e-3, kind="sanity")
    assert margin(bad.value, bad.threshold) == pytest.approx((1e-3 - 0.1) / 0.1, rel=1e-6)


def _claims(tmp_path, seed, values):
    """Claim files of one seed: fig A with a comparison and a structural claim, fig B (not
    redrawn) with one comparison."""
    d = tmp_path / f"seed-{seed}"
    a = write_claims(d / "a.json", "p", "figA", "quick", [
        compare("ratio", "r < 0.5", values[0], "<", 0.5, kind="paper"),
        holds("order", "A before B", "A", values[1], kind="paper"),
        compare("ok", "trained", 1.0, ">", 0.5, kind="sanity"),
    ])  # fmt: skip
    b = write_claims(d / "b.json", "p", "figB", "quick", [
        compare("cos", "cos > 0.99", 0.995, ">", 0.99, kind="paper"),
    ])  # fmt: skip
    assert a and b
    return [d / "a.json"] + ([d / "b.json"] if seed == 0 else [])


REDRAWN = {"p/figA": True, "p/figB": False}


def test_statuses_counts_and_order(tmp_path):
    seeds = pd.concat(
        [
            seed_table(_claims(tmp_path, 0, (0.3, True)), 0, REDRAWN),
            seed_table(_claims(tmp_path, 1, (0.64, True)), 1, REDRAWN),
            seed_table(_claims(tmp_path, 2, (0.4, True)), 2, REDRAWN),
        ],
        ignore_index=True,
    )
    t = robustness_table(seeds).set_index("claim")
    assert t.loc["ratio", "status"] == "fragile"
    assert t.loc["ratio", "seeds_passed"] == "2/3" and t.loc["ratio", "failed_on"] == "1"
    assert (t.loc["ratio", "value_min"], t.loc["ratio", "value_median"]) == (0.3, 0.4)
    assert t.loc["ratio", "value_max"] == 0.64
    assert t.loc["order", "status"] == "holds" and math.isnan(t.loc["order", "value_min"])
    assert t.loc["cos", "status"] == "once-holds" and t.loc["cos", "seeds"] == 1
    # fragile first, then held (paper before sanity), then measured once
    assert list(robustness_table(seeds).claim) == ["ratio", "order", "ok", "cos"]
    text = headline(robustness_table(seeds), [0, 1, 2])
    # pooled over the three draws (one seed each): ratio 2 of 3 is short of the 3 the sign test
    # needs, order holds on 3 of 3, cos is measured once (1 of 1)
    assert text.startswith("Paper claims pooled over the seeds of every draw (seed shifts 0, 1, "
                           "2): 2/3 hold, 0 fail, 1 inconclusive, 0 void (1 of them measured once")
    assert t.loc["ratio", "pooled"] == "inconclusive"
    assert t.loc["ratio", "pooled_seeds"] == "2/3 hold, 3 needed"
    assert t.loc["ratio", "verdicts"] == "0:passed 1:failed 2:passed"
    assert "Per draw: 2 hold on every draw, 1 seed-fragile (1 not yet examined), 0 fail on " \
        "every draw where their run is valid, 0 inconclusive on every such draw, 0 void on some " \
        "draw." in text  # fmt: skip


def test_an_examined_claim_is_judged_by_its_rate_and_documented(tmp_path):
    seeds = pd.concat(
        [
            seed_table(_claims(tmp_path, s, (v, True)), s, REDRAWN)
            for s, v in enumerate((0.3, 0.64, 0.4))
        ],
        ignore_index=True,
    )
    note = "the paper speaks of typical draws"
    for rate, status in ((0.6, "rate-holds"), (0.7, "rate-fails")):  # 2/3 of the seeds pass
        exam = {"p/figA/ratio": {"outcome": "a", "rate": rate, "note": note}}
        check_examined(exam)
        t = robustness_table(seeds, exam).set_index("claim")
        assert t.loc["ratio", "status"] == status and t.loc["ratio", "examined"] == "a"
        exam_text = t.loc["ratio", "examination"]
        assert note in exam_text and f"{rate:.0%}" in exam_text
        text = headline(robustness_table(seeds, exam), [0, 1, 2])
        assert f"of which {int(status == 'rate-holds')}/1 judged by their pass rate" in text
    d = {"p/figA/ratio": {"outcome": "d", "note": "kept"}}
    assert robustness_table(seeds, d).set_index("claim").loc["ratio", "status"] == "fragile"
    for bad in ({"p/figA/ratio": {"outcome": "a", "note": "x"}},  # (a) needs its rate
                {"p/figA/ratio": {"outcome": "d", "note": "x", "rate": 0.5}},
                {"p/figA/ratio": {"outcome": "e", "note": "x"}},
                {"p/figA": {"outcome": "d", "note": "x"}}):  # fmt: skip
        with pytest.raises(ValueError, match="examined"):
            check_examined(bad)


def test_write_robustness_puts_the_headline_and_every_claim(tmp_path):
    seeds = pd.concat(
        [seed_table(_claims(tmp_path, s, (0.6, False)), s, REDRAWN) for s in (0, 1)],
        ignore_index=True,
    )
    shows = dict(preset="quick", control="none", folders=["results", "results/seed-1"])
    table = write_robustness(seeds, tmp_path / "s.md", tmp_path / "s.csv", shows)
    md = (tmp_path / "s.md").read_text()
    assert "**Paper claims pooled over the seeds of every draw (seed shifts 0, 1): 1/3 hold" in md
    assert "| p | figA | paper | ratio | failed | 0/2 hold, 2 needed | fails | 0:failed " \
        "1:failed |" \
        in md  # fmt: skip
    assert len(pd.read_csv(tmp_path / "s.csv")) == len(table) == 4


def _seeds_with_a_broken_run(tmp_path):
    """Seeds 0-3 of fig A; on seed 1 its sanity check fails, so its paper claims are void there."""
    tables = []
    for seed, (ratio, ok) in enumerate([(0.3, True), (0.3, False), (0.6, True), (0.4, True)]):
        d = tmp_path / f"v{seed}"
        write_claims(d / "a.json", "p", "figA", "quick", [
            compare("ratio", "r < 0.5", ratio, "<", 0.5, kind="paper"),
            holds("order", "A before B", "A", True, kind="paper"),
            compare("ok", "trained", 1.0 if ok else 0.0, ">", 0.5, kind="sanity"),
        ])  # fmt: skip
        tables.append(seed_table([d / "a.json"], seed, {"p/figA": True}))
    return pd.concat(tables, ignore_index=True)


def test_a_seed_whose_run_failed_a_sanity_check_voids_its_paper_claims(tmp_path):
    """Seed 1's paper claims passed as measured but are void (its sanity check failed): `order`
    passes on every other seed (holds-valid, not holds), `ratio` passes on 0, 3 and fails on 2
    (fragile: 2 passed, 1 failed, 1 void)."""
    seeds = _seeds_with_a_broken_run(tmp_path)
    assert seeds[(seeds.seed == 1) & (seeds.claim == "order")].passed.all()  # as measured
    v = with_verdicts(seeds).set_index(["seed", "claim"]).verdict
    assert (v[(1, "order")], v[(1, "ratio")], v[(1, "ok")]) == ("void", "void", "failed")
    t = robustness_table(seeds).set_index("claim")
    assert t.loc["order", ["status", "passed", "failed", "void", "void_on"]].tolist() == [
        "holds-valid", 3, 0, 1, "1"]  # fmt: skip
    assert t.loc["ratio", ["status", "passed", "failed", "void", "failed_on", "void_on"]].tolist() \
        == ["fragile", 2, 1, 1, "2", "1"]  # fmt: skip
    assert t.loc["ok", ["status", "failed_on"]].tolist() == ["fragile", "1"]
    # as judged by a rate (outcome a), a void seed does not pass: 2/4 against 0.5 holds, 0.6 not
    for rate, status in ((0.5, "rate-holds"), (0.6, "rate-fails")):
        exam = {"p/figA/ratio": {"outcome": "a", "rate": rate, "note": "typical draws"}}
        assert robustness_table(seeds, exam).set_index("claim").loc["ratio", "status"] == status
    text = headline(robustness_table(seeds), [0, 1, 2, 3])
    # pooled over the three valid draws: order 3 of 3 holds; ratio 2 of 3 is inconclusive
    assert "(seed shifts 0, 1, 2, 3): 1/2 hold, 0 fail, 1 inconclusive, 0 void" in text
    assert "Per draw: 0 hold on every draw" in text
    assert "2 void on some draw (1 pass on every other draw, 0 void on every draw)." in text
    notes = figure_notes(robustness_table(seeds), [0, 1, 2, 3])[("p", "figA")]
    assert "Void (the figure's run failed a sanity check): ``ratio`` on draw 1, ``order`` on " \
        "draw 1." in notes  # fmt: skip
    assert figure_summary(robustness_table(seeds))[("p", "figA")] == (
        "pooled: 1/2 hold, 1 inconclusive; 0/2 hold on all 4 draws; 1 seed-fragile; 2 void on "
        "some draw; sanity failing on some draw: ok"
    )


def test_the_robustness_picture_and_caption_show_void_seeds(tmp_path):
    from attnbias.plotting.robustness import _VOID, robustness_caption, robustness_grid

    seeds = _seeds_with_a_broken_run(tmp_path)
    fig = robustness_grid(with_verdicts(seeds), "p")
    img = fig.axes[0].images[0].get_array()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    row = labels.index("figA order")
    assert tuple(img[row, 1]) == _VOID and tuple(img[row, 0]) != _VOID
    caption = robustness_caption(robustness_table(seeds), "p", [0, 1, 2, 3])
    assert "- figA ``order``: void on seed 1; passes on 3/4" in caption


def test_seed_table_rejects_a_claim_without_kind(tmp_path):
    f = tmp_path / "c.json"
    claim = {"id": "x", "statement": "s", "value": 1, "threshold": "> 0", "passed": True}
    f.write_text(json.dumps({"paper": "p", "figure": "figA", "claims": [claim]}))
    with pytest.raises(ValueError, match="no valid kind"):
        seed_table([f], 0, REDRAWN)


def test_a_seed_shift_draws_seeds_disjoint_from_the_default_ones():
    cfg = {"seeds": [0, 1, 2, 3, 4], "seed_base": 1000, "init_seed": 0, "lr": 0.1}
    one, two = shift_seeds(cfg, 1), shift_seeds(cfg, 2)
    assert one["seeds"] == [SEED_STRIDE + s for s in range(5)] and one["lr"] == 0.1
    assert one["seed_base"] == 1000 + SEED_STRIDE and two["init_seed"] == 2 * SEED_STRIDE
    assert not set(one["seeds"]) & set(cfg["seeds"]) and not set(one["seeds"]) & set(two["seeds"])


def test_execution_options_are_passed_on_and_nothing_else():
    argv = ["snakemake", "--workflow-profile", "profiles/slurm", "-n", "--config", "seed=1",
            "-j", "8", "--executor=slurm", "robustness"]  # fmt: skip
    assert execution_options(argv) == [
        "--workflow-profile", "profiles/slurm", "-j", "8", "--executor=slurm",
    ]  # fmt: skip
    assert execution_options(["snakemake", "--cores", "2", "all"]) == []


def test_the_examined_claims_file_is_well_formed_and_names_real_figures():
    """workflow/report/examined.yaml: each entry a valid outcome with its note, for a figure that
    has a claims function."""
    import importlib
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    examined = yaml.safe_load((root / "workflow" / "report" / "examined.yaml").read_text())
    check_examined(examined)
    assert examined, "no examined claim"
    for key in examined:
        paper, figure, _ = key.split("/")
        assert callable(getattr(importlib.import_module(f"attnbias.claims.{paper}"), figure)), key


def test_pooled_verdict_uses_the_rule_of_one_draw():
    """Paper claims pool by the sign test (11 of 15), sanity checks on every seed; void draws are
    left out."""
    from attnbias.claims.robustness import pooled

    draws = [json.dumps([True, True, True])] * 4 + [json.dumps([True, False, True])]
    assert pooled(draws, ["passed"] * 4 + ["inconclusive"]) == ("passed", "14/15 hold, 11 needed")
    assert pooled(draws, ["passed"] * 5, "sanity") == ("failed", "14/15 hold, 15 needed")
    mixed = [json.dumps([True, False, False])] * 5
    assert pooled(mixed, ["inconclusive"] * 5)[0] == "inconclusive"  # 5/15 hold, 10 fail
    assert pooled(draws, ["void"] * 5) == ("void", "")
