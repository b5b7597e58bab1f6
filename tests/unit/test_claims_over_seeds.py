"""The rule that judges a figure's claims over its seeds (attnbias.claims.core.over_seeds,
docs/outputs.md#claims-over-seeds): sanity on every seed; a paper claim by a sign test over the
seeds (false-pass rate at most 1/8 when there is no effect) that the seed mean must agree with,
else inconclusive; every verdict with its reason."""

import numpy as np
import pytest

from attnbias.claims.caption import render_caption
from attnbias.claims.core import (
    FALSE_PASS,
    compare,
    false_pass_rate,
    over_seeds,
    reason,
    resolve,
    seeds_needed,
    verdicts,
    write_claims,
)


def _claims(paper_value, sanity_value):
    return [
        compare("gain", "a gain", paper_value, ">", 0.0, kind="paper"),
        compare("trained", "it trained", sanity_value, ">=", 0.02, kind="sanity"),
    ]


@pytest.mark.parametrize(
    "n, need, rate",
    [(1, 1, 1 / 2), (2, 2, 1 / 4), (3, 3, 1 / 8), (4, 4, 1 / 16), (5, 5, 1 / 32),
     (6, 5, 7 / 64), (7, 6, 8 / 128), (15, 11, 1941 / 32768)],
)  # fmt: skip
def test_seeds_needed_is_a_sign_test_at_one_in_eight(n, need, rate):
    # 3 of 3: 1/8 exactly; 11 of 15: P[Bin(15, 1/2) >= 11] = 1941/32768 = 0.059, while 10 of 15
    # would be 0.151 > 1/8
    assert seeds_needed(n) == need
    assert false_pass_rate(n) == pytest.approx(rate)
    assert n < 3 or false_pass_rate(n) <= FALSE_PASS


@pytest.mark.parametrize("n", [3, 5, 15])
def test_false_pass_rate_on_simulated_seeds_without_an_effect(n):
    """No effect: each seed's value is noise centred on the threshold.  The share of claims that
    hold is the rule's false-pass rate (1/8 for three seeds), as many fail, the rest are
    inconclusive; never a pass where the seeds disagree more than chance allows."""
    rng = np.random.default_rng(20261129)
    trials = 40_000
    values = rng.normal(0.0, 0.006, size=(trials, n))  # the draw-to-draw spread of fastrates Fig 4
    out = np.array([resolve(v > 0) for v in values])
    share = {o: float(np.mean(out == o)) for o in ("passed", "failed", "inconclusive")}
    se = np.sqrt(false_pass_rate(n) / trials)
    assert share["passed"] == pytest.approx(false_pass_rate(n), abs=5 * se)
    assert share["failed"] == pytest.approx(false_pass_rate(n), abs=5 * se)
    assert share["passed"] <= FALSE_PASS + 5 * se
    # a real effect of two spreads is resolved nearly always
    strong = rng.normal(0.012, 0.006, size=(2_000, n))
    assert np.mean([resolve(v > 0) == "passed" for v in strong]) > 0.85


def test_paper_claim_holds_only_when_every_seed_and_the_mean_agree():
    per = {0: _claims(0.3, 0.1), 1: _claims(0.1, 0.1), 2: _claims(0.2, 0.1)}
    gain, trained = over_seeds(per, mean=_claims(0.2, 0.1)[:1])
    assert gain.outcome == "passed" and gain.passed and gain.value == pytest.approx(0.2)
    assert gain.seeds["1"] == {"value": 0.1, "passed": True}
    assert "3 of 3" in gain.rule and "0.125" in gain.rule
    assert trained.passed and trained.rule == "on every seed (3)"
    # the seeds of fastrates Fig 4's auc_sngd (issue 46): mixed, so inconclusive, whatever the mean
    per = {0: _claims(-0.0046, 0.1), 1: _claims(0.0017, 0.1), 2: _claims(0.0080, 0.1)}
    gain = over_seeds(per, mean=_claims(0.0017, 0.1)[:1])[0]
    assert gain.outcome == "inconclusive" and not gain.passed
    assert gain.reason.startswith("inconclusive: seeds disagree (2 hold, 1 fail; a verdict needs 3")
    assert "-0.0046" in gain.reason and "+0.008" in gain.reason and "mean +0.0017" in gain.reason
    # every seed against it, and the mean too: failed
    per = {s: _claims(-0.1 - s, 0.1) for s in range(3)}
    assert over_seeds(per, mean=_claims(-1.1, 0.1)[:1])[0].outcome == "failed"
    # every seed for it, the seed mean against it: the two quantities disagree, inconclusive
    per = {s: _claims(0.1, 0.1) for s in range(3)}
    gain = over_seeds(per, mean=_claims(-0.05, 0.1)[:1])[0]
    assert gain.outcome == "inconclusive" and "seed-mean data disagree" in gain.reason


def test_sanity_fails_on_one_bad_seed_and_shows_that_seed():
    per = {0: _claims(0.3, 0.1), 1: _claims(0.3, 0.01), 2: _claims(0.3, 0.2)}
    _, trained = over_seeds(per, mean=None)
    assert not trained.passed and trained.value == pytest.approx(0.01)
    assert trained.outcome == "failed" and trained.reason.startswith("fails on 1 of 3 seeds")


def test_without_a_mean_the_median_is_shown_and_seeds_decide():
    per = {0: _claims(0.3, 0.1), 1: _claims(0.1, 0.1), 2: _claims(0.2, 0.1)}
    gain = over_seeds(per, mean=None)[0]
    assert gain.passed and gain.value == pytest.approx(0.2)
    assert gain.rule.startswith("sign test: 3 of 3 seeds agree")
    per[1] = _claims(-0.1, 0.1)
    assert over_seeds(per, mean=None)[0].outcome == "inconclusive"


def test_mismatched_claims_and_a_missing_mean_are_errors():
    with pytest.raises(ValueError, match="seed 1"):
        over_seeds({0: _claims(1, 1), 1: _claims(1, 1)[:1]}, mean=None)
    with pytest.raises(ValueError, match="gain"):
        over_seeds({0: _claims(1, 1), 1: _claims(1, 1)}, mean=[])


def test_verdicts_keep_inconclusive_apart_and_void_wins():
    per = {0: _claims(0.3, 0.1), 1: _claims(-0.1, 0.1), 2: _claims(0.2, 0.1)}
    records = [c.to_dict() for c in over_seeds(per, mean=_claims(0.1, 0.1)[:1])]
    assert verdicts(records) == ["inconclusive", "passed"]
    records[1]["passed"] = False  # the sanity check fails: the paper claim is void
    assert verdicts(records) == ["void", "failed"]
    assert reason(records[0], "void", ["trained"]).startswith("void: its figure's run failed")


def test_claim_file_and_caption_carry_every_seed_verdict_and_reason(tmp_path):
    per = {0: _claims(0.3, 0.1), 1: _claims(-0.1, 0.1), 2: _claims(0.2, 0.1)}
    claims = over_seeds(per, mean=_claims(0.13, 0.1)[:1])
    doc = write_claims(tmp_path / "c.json", "p", "f", "quick", claims)
    gain = doc["claims"][0]
    assert set(gain["seeds"]) == {"0", "1", "2"} and gain["verdict"] == "inconclusive"
    assert gain["reason"].startswith("inconclusive: seeds disagree")
    # a one-draw claim: its reason says how the value meets the threshold
    one = [compare("x", "x", 0.477, "<=", 0.5, kind="paper")]
    once = write_claims(tmp_path / "d.json", "p", "f", "quick", one)["claims"][0]
    assert "seeds" not in once and once["reason"] == "meets <= 0.5 with +0.477"
    out = tmp_path / "cap.rst"
    render_caption(None, doc, {}, out, text="A figure.")
    text = out.read_text()
    assert "0/1 passed, 0 failed, 1 inconclusive, 0 void" in text
    assert "*INCONCLUSIVE* ``gain``" in text and "1 ✗ -0.1" in text
    assert "- *INCONCLUSIVE* ``gain``: a gain — seeds disagree" in text  # once, with its reason
