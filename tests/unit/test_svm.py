"""Closed-form SVM solutions of docs/papers/maxmargin.md, to 1e-6, and solver behaviour."""

import numpy as np
import pytest

from attnbias.data import synthetic as syn
from attnbias.svm import (
    InfeasibleSVM,
    att_svm,
    classify_selection,
    head_svm,
    min_norm_qp,
    svm_neighbours,
)


def key2(prob):
    return prob.K[..., :2]


def test_fig1a_gmm_and_active_set():
    prob = syn.fig1_single_input(local=False)
    res = att_svm(key2(prob), prob.opt)
    np.testing.assert_allclose(res.x, [-0.1 / 1.01, 1 / 1.01], atol=1e-6)
    assert res.objective == pytest.approx(0.49505, abs=1e-5)
    nb = svm_neighbours(key2(prob), prob.opt, res.x)
    assert nb.tolist() == [[False, False, True]]  # only (0, 0) is active; (1, 0) has margin 1.099


def test_fig1b_lmm_is_locally_optimal():
    prob = syn.fig1_single_input(local=True)
    res = att_svm(key2(prob), [1])
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-6)
    nb = svm_neighbours(key2(prob), [1], res.x)
    cls = classify_selection(prob.gamma, [1], nb)
    assert cls["lmm"] and not cls["gmm"]
    assert cls["gamma_gap"] == pytest.approx(0.9)


def test_fig1a_square_is_not_locally_optimal():
    prob = syn.fig1_single_input(local=False)
    nb = svm_neighbours(key2(prob), [1], att_svm(key2(prob), [1]).x)
    assert not classify_selection(prob.gamma, [1], nb)["lmm"]  # neighbour (0,0) ties at 0.9


def test_fig1c_gmm():
    prob = syn.fig1c_problem()
    np.testing.assert_allclose(att_svm(key2(prob), prob.opt).x, [0.8446, 0.1711], atol=1e-3)


def test_fig1c_data_reproduces_table():
    pos, source = syn.fig1c_positions()
    assert source == "torch-seed-0"
    np.testing.assert_allclose(pos, syn.FIG1C_TABLE, atol=1e-4)


def test_fig1c_stored_draw_is_torchs_seed_0_draw_bit_for_bit():
    import torch

    g = torch.Generator().manual_seed(0)
    X = (0.2 * torch.randn(3, 7, 3, generator=g, dtype=torch.float32)).double().numpy()
    assert np.array_equal(X[..., :2], syn.FIG1C_DRAW)


def test_fig2_lmm_gmm():
    prob = syn.fig2_problem()
    np.testing.assert_allclose(att_svm(key2(prob), [1]).x, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(att_svm(key2(prob), [0]).x, [-0.5, 0.5], atol=1e-6)


def test_fig3a_joint_svms():
    X, Y = syn.fig3_joint_problem(relaxed=False)
    res = att_svm(X, [1, 1, 1])
    np.testing.assert_allclose(res.x, [4 / 3, 1 / 3], atol=1e-6)
    assert res.objective == pytest.approx(17 / 18, abs=1e-6)
    # KKT multipliers 7/9 (teal) and 10/9 (yellow); green inactive
    np.testing.assert_allclose(res.dual, [0.0, 7 / 9, 10 / 9], atol=1e-5)
    np.testing.assert_allclose(head_svm(X[:, 1], Y).x, [0.0, 1.0], atol=1e-6)


def test_fig3b_relaxed_and_full_svm():
    X, Y = syn.fig3_joint_problem(relaxed=True)
    np.testing.assert_allclose(
        att_svm(X, [1, 1, 1], support=[True, True, False]).x, [1.0, 0.0], atol=1e-6
    )
    full = att_svm(X, [1, 1, 1])
    np.testing.assert_allclose(full.x, [1.25, 0.25], atol=1e-6)
    np.testing.assert_allclose(full.dual, [0.0, 0.875, 0.75], atol=1e-5)


def test_fig5_and_fig8():
    np.testing.assert_allclose(
        att_svm(key2(syn.fig5_problem(3.0)), [1, 1]).x, [1.0, 0.0], atol=1e-6
    )
    prob = syn.fig8_problem()
    np.testing.assert_allclose(att_svm(key2(prob), [0, 0]).x, [1.0, 3.0], atol=1e-6)
    lmm = att_svm(key2(prob), [0, 1]).x
    np.testing.assert_allclose(lmm, [1.0, 0.0], atol=1e-6)
    nb = svm_neighbours(key2(prob), [0, 1], lmm)
    assert not nb[1].any()  # the teal square has no SVM-neighbour


@pytest.mark.parametrize("m,d", [(5, 40), (30, 8)])
def test_primal_and_dual_agree(m, d):
    rng = np.random.default_rng(m + d)
    A = rng.normal(size=(m, d))
    b = np.ones(m)
    if m > d:  # make it feasible: constraints satisfied by a planted direction
        w = rng.normal(size=d)
        A = A * np.sign(A @ w)[:, None]
    xp = min_norm_qp(A, b, method="primal").x
    xd = min_norm_qp(A, b, method="dual").x
    np.testing.assert_allclose(xp, xd, atol=1e-6)
    assert np.all(A @ xp >= 1 - 1e-6)


def test_infeasible_raises_and_nonstrict_returns_nan():
    A = np.array([[1.0], [-1.0]])
    with pytest.raises(InfeasibleSVM):
        min_norm_qp(A, np.ones(2))
    assert np.isnan(min_norm_qp(A, np.ones(2), strict=False).x).all()
