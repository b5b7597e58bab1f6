"""The rule that judges a figure's claims over its seeds (attnbias.claims.core.over_seeds,
docs/outputs.md#claims-over-seeds): sanity on every seed; paper on the seed mean and on at least
two thirds of the seeds."""

import pytest

from attnbias.claims.caption import _over_seeds
from attnbias.claims.core import compare, over_seeds, seeds_needed


def _claims(paper_value, sanity_value):
    return [
        compare("gain", "a gain", paper_value, ">", 0.0, kind="paper"),
        compare("trained", "it trained", sanity_value, ">=", 0.02, kind="sanity"),
    ]


@pytest.mark.parametrize("n, need", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 4), (6, 4)])
def test_two_thirds_rounded_up(n, need):
    assert seeds_needed(n) == need


def test_paper_claim_needs_the_mean_and_two_of_three_seeds():
    per = {0: _claims(0.3, 0.1), 1: _claims(-0.1, 0.1), 2: _claims(0.2, 0.1)}
    gain, trained = over_seeds(per, mean=_claims(0.13, 0.1)[:1])
    assert gain.passed and gain.value == pytest.approx(0.13)
    assert gain.seeds["1"] == {"value": -0.1, "passed": False}
    assert gain.rule == "on the seed mean and on at least 2 of 3 seeds"
    assert trained.passed and trained.rule == "on every seed (3)"
    # one seed more against it: 1 of 3 is not enough, whatever the mean says
    per[2] = _claims(-0.2, 0.1)
    assert not over_seeds(per, mean=_claims(0.01, 0.1)[:1])[0].passed
    # two of three for it, but the mean against it
    per[2] = _claims(0.2, 0.1)
    assert not over_seeds(per, mean=_claims(-0.05, 0.1)[:1])[0].passed


def test_sanity_fails_on_one_bad_seed_and_shows_that_seed():
    per = {0: _claims(0.3, 0.1), 1: _claims(0.3, 0.01), 2: _claims(0.3, 0.2)}
    _, trained = over_seeds(per, mean=None)
    assert not trained.passed and trained.value == pytest.approx(0.01)


def test_without_a_mean_the_median_is_shown_and_seeds_decide():
    per = {0: _claims(0.3, 0.1), 1: _claims(-0.1, 0.1), 2: _claims(0.2, 0.1)}
    gain = over_seeds(per, mean=None)[0]
    assert gain.passed and gain.value == pytest.approx(0.2)
    assert gain.rule == "on at least 2 of 3 seeds"


def test_mismatched_claims_and_a_missing_mean_are_errors():
    with pytest.raises(ValueError, match="seed 1"):
        over_seeds({0: _claims(1, 1), 1: _claims(1, 1)[:1]}, mean=None)
    with pytest.raises(ValueError, match="gain"):
        over_seeds({0: _claims(1, 1), 1: _claims(1, 1)}, mean=[])


def test_record_and_caption_carry_every_seed():
    per = {0: _claims(0.3, 0.1), 1: _claims(-0.1, 0.1), 2: _claims(0.2, 0.1)}
    d = over_seeds(per, mean=_claims(0.13, 0.1)[:1])[0].to_dict()
    assert set(d["seeds"]) == {"0", "1", "2"} and "rule" in d
    text = _over_seeds(d)
    assert "1 ✗ -0.1" in text and "2 of 3" in text
    # a one-draw claim keeps its old record
    assert "seeds" not in compare("x", "x", 1.0, ">", 0.0, kind="paper").to_dict()
