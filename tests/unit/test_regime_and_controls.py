"""Regime checks and positive controls (attnbias.claims.core): a failed regime check voids its
figure's paper claims; a paper claim that does not pass while its positive control does not pass
either is void ("not testable at this budget"); a pass stands whatever its control; the summary,
the strict gate, the caption and the robustness table read the same verdicts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from attnbias.claims.caption import render_caption
from attnbias.claims.core import (
    Claim,
    compare,
    over_seeds,
    verdicts,
    void_causes,
    void_checks,
    write_claims,
)
from attnbias.claims.robustness import seed_table, with_verdicts
from attnbias.claims.summary import gate, headline, summary_table, violations


def _rec(cid, kind, passed, outcome=None, control=None, value=1.0):
    return {"id": cid, "kind": kind, "passed": passed, "outcome": outcome, "value": value,
            "threshold": "<= 0.5", "positive_control": control}  # fmt: skip


def test_a_failed_regime_check_voids_the_paper_claims_and_names_itself():
    claims = [_rec("p1", "paper", True), _rec("p2", "paper", False),
              _rec("c1", "control", True), _rec("r1", "regime", False),
              _rec("s1", "sanity", True)]  # fmt: skip
    assert verdicts(claims) == ["void", "void", "void", "failed", "passed"]
    causes = void_causes(claims)
    assert "regime check r1 failed" in causes[0] and "measures the budget" in causes[0]
    assert causes[3:] == [None, None]
    assert void_checks(claims)[:3] == ["r1", "r1", "r1"]


def test_a_failed_sanity_check_takes_precedence_over_a_regime_check():
    claims = [_rec("p1", "paper", True), _rec("r1", "regime", False), _rec("s1", "sanity", False)]
    assert verdicts(claims)[0] == "void"
    assert "sanity check s1" in void_causes(claims)[0]
    assert void_checks(claims)[0] == "s1"


@pytest.mark.parametrize(
    ("paper", "control", "expected"),
    [
        ((False, "failed"), (False, "failed"), "void"),
        ((False, "failed"), (False, "inconclusive"), "void"),
        ((False, "inconclusive"), (False, "failed"), "void"),
        ((False, "failed"), (True, "passed"), "failed"),  # the test can detect it: a real failure
        ((True, "passed"), (False, "failed"), "passed"),  # a pass stands whatever its control
        ((False, "inconclusive"), (True, "passed"), "inconclusive"),
    ],
)
def test_a_claim_whose_positive_control_fails_too_is_not_testable(paper, control, expected):
    claims = [_rec("final_sngd", "paper", *paper, control="final_adamw"),
              _rec("final_adamw", "control", *control, value=0.62)]  # fmt: skip
    v = verdicts(claims)
    assert v[0] == expected
    assert v[1] == control[1]  # a control is never voided by its own claim
    if expected == "void":
        cause = void_causes(claims)[0]
        assert cause.startswith("void: not testable at this budget")
        assert "final_adamw" in cause and "+0.62" in cause and "<= 0.5" in cause
        assert void_checks(claims)[0] == "final_adamw"


def test_over_seeds_judges_a_control_by_the_sign_test_and_keeps_the_link():
    def seed(s, v_paper, v_ctrl, v_regime):
        return [compare("final_sngd", "SNGD / SGD", v_paper, "<=", 0.5, kind="paper",
                        positive_control="final_adamw"),
                compare("final_adamw", "AdamW / SGD", v_ctrl, "<=", 0.5, kind="control"),
                compare("learned", "loss / H", v_regime, "<=", 0.5, kind="regime")]  # fmt: skip

    per = {0: seed(0, 0.7, 0.4, 0.3), 1: seed(1, 0.8, 0.45, 0.4), 2: seed(2, 0.9, 0.6, 0.6)}
    mean = [c for c in seed(-1, 0.8, 0.48, 0.43) if c.kind != "regime"]
    out = {c.id: c for c in over_seeds(per, mean)}
    assert out["final_adamw"].kind == "control" and out["final_adamw"].outcome == "inconclusive"
    assert out["final_sngd"].positive_control == "final_adamw"
    assert out["final_sngd"].outcome == "failed"
    assert out["learned"].outcome == "failed"  # a regime check holds only on every seed
    assert out["learned"].value == 0.6  # the first seed that failed it
    recs = [c.to_dict() for c in out.values()]
    assert recs[0]["positive_control"] == "final_adamw" and "positive_control" not in recs[1]
    assert verdicts(recs) == ["void", "void", "failed"]  # voided by the regime check first


def _doc(tmp_path, name, claims, control="none"):
    path = tmp_path / f"{name}.json"
    write_claims(path, "fastrates", name, "quick", claims, control=control)
    return path


def test_summary_caption_and_gate_read_regime_checks_and_controls(tmp_path):
    fig1 = [compare("final_sngd", "SNGD / SGD", 0.8, "<=", 0.5, kind="paper",
                    positive_control="final_adamw"),
            compare("auc_sngd", "AUC ratio", 0.8, "<=", 0.9, kind="paper"),
            compare("final_adamw", "AdamW / SGD", 0.6, "<=", 0.5, kind="control"),
            compare("learned_sgd", "SGD loss / H", 0.3, "<=", 0.5, kind="regime"),
            compare("finite", "finite", 1.0, ">=", 1.0, kind="sanity")]  # fmt: skip
    fig4 = [compare("final_sps", "SPS / SGD", 0.3, "<=", 0.5, kind="paper"),
            compare("learned_sgd", "SGD loss / H", 0.9, "<=", 0.5, kind="regime")]
    files = [_doc(tmp_path, "fig1", fig1), _doc(tmp_path, "fig4", fig4)]
    doc = json.loads(files[0].read_text())
    assert [c["verdict"] for c in doc["claims"]] == ["void", "passed", "failed", "passed",
                                                     "passed"]  # fmt: skip
    assert doc["claims"][0]["reason"].startswith("void: not testable at this budget")
    df = summary_table(files)
    assert df.kind.tolist() == ["paper", "paper", "control", "regime", "sanity",
                                "paper", "regime"]  # fmt: skip
    assert df.set_index(["figure", "claim"]).void_by.to_dict()[("fig4", "final_sps")] == \
        "learned_sgd"  # fmt: skip
    assert headline(df) == (
        "Paper claims: 1/3 passed, 0 failed, 0 inconclusive, 2 void.  Regime checks: 1/2 passed, "
        "1 failed.  Sanity checks: 1/1 passed, 0 failed.  Positive controls: 0/1 passed, "
        "1 failed.  Identities (not evidence): 0."
    )
    # the strict gate: the failed regime check is a violation, the failed positive control is not
    assert violations(df).claim.tolist() == ["learned_sgd"]
    csv = tmp_path / "summary.csv"
    df.to_csv(csv, index=False)
    with pytest.raises(SystemExit, match=r"\[regime\] fastrates fig4 learned_sgd failed"):
        gate(csv, tmp_path / "ok")
    # the caption: each kind counted, the void claim's reason
    tpl = tmp_path / "t.rst"
    tpl.write_text("A figure.\n")
    out = tmp_path / "c.rst"
    render_caption(tpl, json.loads(files[1].read_text()), {}, out)
    text = out.read_text()
    assert "0/1 passed, 0 failed, 0 inconclusive, 1 void (regime check ``learned_sgd`` failed)" \
        in text  # fmt: skip
    assert "**Regime checks:** 0/1 passed, 1 failed." in text
    assert "has not reached the regime" in text


def test_robustness_reads_the_positive_control_of_each_draw(tmp_path):
    a = [compare("final_sngd", "SNGD / SGD", 0.8, "<=", 0.5, kind="paper",
                 positive_control="final_adamw"),
         compare("final_adamw", "AdamW / SGD", 0.6, "<=", 0.5, kind="control")]  # fmt: skip
    b = [compare("final_sngd", "SNGD / SGD", 0.8, "<=", 0.5, kind="paper",
                 positive_control="final_adamw"),
         compare("final_adamw", "AdamW / SGD", 0.4, "<=", 0.5, kind="control")]  # fmt: skip
    t0 = seed_table([_doc(tmp_path / "s0", "fig1", a)], 0, {"fastrates/fig1": True})
    t1 = seed_table([_doc(tmp_path / "s1", "fig1", b)], 1, {"fastrates/fig1": True})
    v = with_verdicts(pd.concat([t0, t1], ignore_index=True))
    got = dict(zip(zip(v.seed, v.claim, strict=True), v.verdict, strict=True))
    assert got == {(0, "final_sngd"): "void", (0, "final_adamw"): "failed",
                   (1, "final_sngd"): "failed", (1, "final_adamw"): "passed"}  # fmt: skip


def test_a_positive_control_must_be_a_claim_of_the_figure(tmp_path):
    bad = [Claim("p", "paper", "s", 1.0, "<= 0.5", False, positive_control="missing")]
    with pytest.raises(ValueError, match="positive control 'missing'"):
        _doc(tmp_path, "fig1", bad)


def test_a_check_of_one_part_voids_only_that_parts_claims(tmp_path):
    """lowrank Fig 3 holds two experiments (the LMs, the ViTs): the ViTs' failed regime check voids
    the ViT claims and the figure's claims of no part, never the LM claims; a check of no part
    voids them all.  The seed table keeps the part, so each draw's verdicts agree."""
    claims = [_rec("lm_rank", "paper", True) | {"part": "lm"},
              _rec("lm_decay", "regime", True) | {"part": "lm"},
              _rec("vit_rank", "paper", False) | {"part": "vit"},
              _rec("vit_settled", "regime", False) | {"part": "vit"},
              _rec("both", "paper", True)]  # fmt: skip
    assert verdicts(claims) == ["passed", "passed", "void", "failed", "void"]
    assert void_checks(claims) == ["", "", "vit_settled", "", "vit_settled"]
    unscoped = [*claims, _rec("trained", "sanity", False)]
    assert verdicts(unscoped)[:5] == ["void", "passed", "void", "failed", "void"]
    assert "sanity check trained" in void_causes(unscoped)[0]

    made = [Claim("lm_rank", "paper", "s", 0.4, "<= 0.5", True, part="lm"),
            Claim("vit_settled", "regime", "s", 0.2, "<= 0.05", False, part="vit"),
            Claim("vit_rank", "paper", "s", 0.4, "<= 0.5", True, part="vit")]  # fmt: skip
    assert [c.to_dict().get("part") for c in made] == ["lm", "vit", "vit"]
    assert "part" not in compare("x", "s", 1.0, "<", 2.0, kind="paper").to_dict()
    v = with_verdicts(seed_table([_doc(tmp_path, "fig3", made)], 0, {"fastrates/fig3": True}))
    assert dict(zip(v.claim, v.verdict, strict=True)) == {
        "lm_rank": "passed", "vit_settled": "failed", "vit_rank": "void"}  # fmt: skip
