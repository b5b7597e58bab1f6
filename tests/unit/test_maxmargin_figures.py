"""Convergence directions of every maxmargin figure, through the same check functions the
workflow uses (claims.maxmargin.check), at the paper's settings (they run in seconds)."""

import numpy as np
import pytest

from attnbias.claims import maxmargin as checks
from attnbias.experiments import maxmargin as mm

INITS = [1.0, 0.5, 0.0, -0.5, -1.0, -1.5]


def assert_all_pass(claims):
    failed = [(c.id, c.value, c.threshold) for c in claims if not c.passed]
    assert not failed, failed


@pytest.fixture(scope="module")
def fig1():
    return mm.compute_fig1(1000, 0.1, INITS)


@pytest.mark.parametrize("fig", ["fig1a", "fig1b", "fig1c"])
def test_fig1(fig1, fig):
    assert_all_pass(checks.check(fig, fig1))


def test_fig1b_split(fig1):
    df, meta = fig1
    last = df[(df.case == "fig1b") & (df.t == 1000)].sort_values("init")
    P = last[["p1", "p2"]].to_numpy()
    P = P / np.linalg.norm(P, axis=1, keepdims=True)
    gmm = np.array([-0.1, 1.0]) / np.hypot(0.1, 1.0)
    assert (P @ gmm > 0.999).tolist() == [True, True, True, True, False, False]
    assert (P @ np.array([1.0, 0.0]) > 0.999).tolist() == [False, False, False, False, True, True]


def test_fig2():
    df, meta = mm.compute_fig2(
        1000, 0.1, 0.1, 2.0, [[2, -25], [2, 0], [2, 25], [4, 20]], [[2, 60], [2, 120]]
    )
    assert_all_pass(checks.check("fig2", (df, meta)))


@pytest.mark.parametrize("fig", ["fig3a", "fig3b", "fig3c"])
def test_fig3(fig):
    assert_all_pass(checks.check(fig, mm.compute_fig3(1000, 0.1, [0.0, -1.0], [-1.0, 0.0])))


def test_fig4_rates():
    data = mm.compute_fig4(200, 0.1, 1.0)
    df = data[0]
    ngd = df[(df.method == "ngd") & (df.t == 200)].norm.item()
    assert 19.0 <= ngd <= 20.0  # ≈ ηt, and ≤ ηt exactly
    assert df[(df.method == "gd") & (df.t == 200)].norm.item() < 5.0
    for fig in ("fig4a", "fig4b"):
        assert_all_pass(checks.check(fig, data))


def test_fig5_signs():
    data = mm.compute_fig5(200, 0.1, [1, 2, 5, 100])
    assert_all_pass(checks.check("fig5", data))
    at = data[0][data[0].t == 200]
    assert at[(at.loss == "correlation") & (at.C == 100)].p2.item() > 0
    assert at[(at.loss == "logistic") & (at.C == 100)].p2.item() < 0


def test_fig8_both_limits():
    assert_all_pass(
        checks.check(
            "fig8", mm.compute_fig8(1000, 0.1, [[0, 0], [1, 1], [0, -2]], [[2, 0], [3, -1]])
        )
    )


def test_fig9_study_small():
    df, meta = mm.compute_fig9([2, 10, 20], 200, 4, 6, 1000, 1.0, 1000, 1e-3, 1e-3, 0.01)
    fr = df.groupby("d").agg(
        nonsat=("saturated", lambda s: (~s).mean()), lmm=("lmm", "mean"), gmm=("gmm", "mean")
    )
    assert fr.nonsat[2] > 0.5 and fr.nonsat[20] == 0.0
    assert fr.lmm[20] >= 0.95
    assert fr.gmm[2] < fr.gmm[10] < fr.gmm[20]
    assert df["corr"].mean() >= 0.99
    assert not df.qp_failed.any()
    for fig in ("fig9a", "fig9b", "fig10"):
        assert_all_pass(checks.check(fig, (df, meta)))


@pytest.mark.parametrize(
    "name",
    [f"compute_fig{k}" for k in (1, 2, 3, 4, 5, 8, 9)] + ["train_vit"],
)
def test_job_functions_resolve(name):
    """The rules' ``func`` names resolve through the package's re-exports."""
    from attnbias.workflow import resolve

    assert resolve("attnbias.experiments", f"maxmargin.{name}") is getattr(mm, name)
