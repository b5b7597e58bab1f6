"""A setting the schema accepts but too small for a figure's claims is recorded as not measurable,
with the reason, never a crash: `maxmargin: {fig1: {steps: 5}}` leaves the late-phase window of
Fig 1(c)'s claims empty."""

import json

import pytest
from conftest import copy_workflow, snakemake_cmd

from attnbias.claims import Claim, is_not_measurable, not_measurable
from attnbias.claims.core import write_claims
from attnbias.layout import results_folder


def test_not_measurable_is_one_failed_sanity_check_with_the_reason(tmp_path):
    claims = not_measurable(ValueError("zero-size array"))
    assert [(c.id, c.kind, c.passed) for c in claims] == [("measurable", "sanity", False)]
    assert "ValueError: zero-size array" in claims[0].value
    doc = write_claims(tmp_path / "c.json", "maxmargin", "fig1c", "quick", claims)
    assert is_not_measurable(doc)
    ok = [Claim("x", "paper", "s", 1.0, "> 0", True)]
    assert not is_not_measurable(write_claims(tmp_path / "d.json", "p", "f", "quick", ok))


@pytest.mark.slow
def test_too_few_steps_are_recorded_as_not_measurable_not_a_crash(tmp_path):
    d = copy_workflow(tmp_path / "wf")
    res = snakemake_cmd(
        "--cores", "2", "maxmargin_fig1c", "--config", "maxmargin={fig1: {steps: 5}}", cwd=d,
        timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    out = d / results_folder(d, config={"maxmargin": {"fig1": {"steps": 5}}})  # an override's
    doc = json.loads((out / "claims/maxmargin/fig1c.json").read_text())
    assert is_not_measurable(doc), doc
    assert "zero-size array" in doc["claims"][0]["value"]
    assert (out / "figures/maxmargin/fig1c.pdf").stat().st_size > 1000
    assert "cannot be measured" in (out / "logs/check/maxmargin/fig1c.log").read_text()
