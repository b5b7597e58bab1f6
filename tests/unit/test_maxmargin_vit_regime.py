"""maxmargin Figs 6-7, the regime check ``late_after_fit`` (docs/papers/maxmargin.md): the late
phase must start after the fit (training accuracy ≥ 0.99 at its first epoch, on every seed), else
the figure's paper claims are void; in the claim file, the void verdict names the check."""

import numpy as np
import pandas as pd
import pytest

from attnbias.claims import maxmargin as checks
from attnbias.claims.core import read_claims, verdicts, write_claims
from attnbias.claims.maxmargin_vit import FIT_ACC, late_after_fit
from attnbias.experiments.maxmargin.vit import VIT_FIG6_COLUMNS

EP = np.arange(31)
MAP_EPOCHS = [0, 6, 12, 18, 24, 30]
QUICK = {"provenance": {"preset": "quick"}}


def _acc(fit_at):
    """Training accuracy per epoch rising linearly from 0.5 to 1 at epoch ``fit_at``, then 1
    (NaN at epoch 0, as the runs record it)."""
    return np.r_[np.nan, np.minimum(1.0, 0.5 + 0.5 * EP[1:] / fit_at)]


def _curves(fit_at):
    """A gathered Fig 7 table of three seeds whose paper claims all hold (ζ falls through the
    learned W_q, W_k, ‖W‖ grows), fitting the data at ``fit_at[seed]``."""
    frames = [
        pd.DataFrame(
            {
                "seed": s,
                "epoch": EP,
                "zeta": 64 * np.exp(-(0.03 + 0.01 * s) * EP),
                "zeta_qk0": np.full(31, 64.0),
                "wnorm": 0.2 + 0.1 * EP,
                "train_acc": _acc(f),
                "probe_acc": np.full(31, 0.9),
            }
        )
        for s, f in enumerate(fit_at)
    ]
    return pd.concat(frames, ignore_index=True)


def _maps(fit_at):
    """A gathered Fig 6 table of three seeds, two images of 8 × 8 patches whose peak weight
    grows from 0.02 to 0.08 over the drawn epochs, fitting the data at ``fit_at[seed]``."""
    rows = []
    for s, f in enumerate(fit_at):
        acc = _acc(f)
        for e in MAP_EPOCHS:
            pk = 0.02 + 0.002 * e
            for img in range(2):
                for k in range(64):
                    w = pk if k == 0 else (1 - pk) / 63
                    rows.append((s, e, img, img, k // 8, k % 8, w, 0.5, acc[e]))
    return pd.DataFrame(rows, columns=["seed", *VIT_FIG6_COLUMNS])


def _meta(fig):
    runs = {str(s): {"seed": s, "final_probe_acc": 0.9} for s in range(3)}
    return dict(QUICK, runs_by_seed=runs) if fig == "fig6" else dict(QUICK)


def _claims(fig, df):
    return {c.id: c for c in getattr(checks, fig)((df, _meta(fig)))}


@pytest.mark.parametrize("fig", ["fig6", "fig7"])
def test_the_regime_check_fails_when_the_late_phase_starts_mid_fit_and_voids_the_claims(
    fig, tmp_path
):
    """Fit at epoch 24 on every seed: at the late phase's first epoch (Fig 7: 15; Fig 6: the first
    drawn epoch ≥ 15, 18) the training accuracy is 0.8125 / 0.875.  The paper claims hold as
    measured, and are void in the claim file, the failed check named."""
    df = (_curves if fig == "fig7" else _maps)([24, 24, 24])
    c = _claims(fig, df)
    reg = c["late_after_fit"]
    assert reg.kind == "regime" and not reg.passed and reg.outcome == "failed"
    start = 15 if fig == "fig7" else 18
    assert reg.value == pytest.approx(0.5 + 0.5 * start / 24)
    assert [r["passed"] for r in reg.seeds.values()] == [False, False, False]
    assert f"(epoch {start})" in reg.statement and "at ≥ 0.99: 24" in reg.statement
    paper = [x for x in c.values() if x.kind == "paper"]
    assert paper and all(x.outcome == "passed" for x in paper), [(x.id, x.value) for x in paper]
    doc = write_claims(tmp_path / f"{fig}.json", "maxmargin", fig, "quick", list(c.values()))
    assert doc == read_claims(tmp_path / f"{fig}.json")
    by_id = {r["id"]: r for r in doc["claims"]}
    for x in paper:
        assert by_id[x.id]["verdict"] == "void"
        assert "the regime check late_after_fit failed" in by_id[x.id]["reason"]
    assert by_id["late_after_fit"]["verdict"] == "failed"
    assert "fails on 3 of 3 seeds" in by_id["late_after_fit"]["reason"]


@pytest.mark.parametrize("fig", ["fig6", "fig7"])
def test_the_regime_check_passes_when_the_fit_comes_first(fig, tmp_path):
    """Fit at epoch 10 on every seed: accuracy 1 at the late phase's first epoch; the paper
    claims keep their verdicts."""
    df = (_curves if fig == "fig7" else _maps)([10, 10, 10])
    c = _claims(fig, df)
    reg = c["late_after_fit"]
    assert reg.passed and reg.value == 1.0 and reg.rule == "on every seed (3)"
    doc = write_claims(tmp_path / f"{fig}.json", "maxmargin", fig, "quick", list(c.values()))
    paper = [r for r in doc["claims"] if r["kind"] == "paper"]
    assert paper and {r["verdict"] for r in paper} == {"passed"}


def test_one_seed_still_fitting_fails_the_regime_check():
    """A regime check must hold on every seed: seed 2 fits at epoch 20 (0.875 at epoch 15)."""
    reg = _claims("fig7", _curves([10, 10, 20]))["late_after_fit"]
    assert not reg.passed and reg.value == pytest.approx(0.875)
    assert {s: r["passed"] for s, r in reg.seeds.items()} == {"0": True, "1": True, "2": False}
    assert "fails on 1 of 3 seeds" in reg.reason
    paper = {"id": "p", "kind": "paper", "passed": True, "outcome": "passed"}
    assert verdicts([paper, reg.to_dict()]) == ["void", "failed"]


def test_the_threshold_and_the_missing_data():
    ep = np.arange(5)
    at = late_after_fit(ep, [np.nan, 0.5, FIT_ACC, 0.98, 1.0], 2)
    assert at.passed and at.value == 0.99 and at.threshold == ">= 0.99"
    assert "at ≥ 0.99: 2" in at.statement and "lowest over its late epochs 0.980" in at.statement
    below = late_after_fit(ep, [np.nan, 0.5, 0.9899, 1.0, 1.0], 2)
    assert not below.passed and below.value == 0.9899 and "at ≥ 0.99: 3" in below.statement
    never = late_after_fit(ep, [np.nan, 0.5, 0.6, 0.7, 0.8], 2)
    assert not never.passed and "never ≥ 0.99" in never.statement
    # no accuracy logged (a table of before the column), or no late phase: nothing to show the
    # fit, the check fails
    assert np.isnan(late_after_fit(ep, np.full(5, np.nan), 2).value)
    assert not late_after_fit(ep, np.ones(5), None).passed
    maps = _maps([10, 10, 10]).drop(columns="train_acc")
    reg = _claims("fig6", maps)["late_after_fit"]
    assert not reg.passed and np.isnan(reg.value)
