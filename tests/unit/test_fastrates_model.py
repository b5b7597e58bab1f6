"""fastrates: self-attention model, W_mm and data generators (docs/papers/fastrates.md: the model,
the data models and the library tests)."""

import numpy as np
import pytest

from attnbias.data import fastrates as fd
from attnbias.models import selfattn as sa
from attnbias.models.attention import log_softmax, loss_value, softmax
from attnbias.models.prompt import token_scores
from attnbias.svm.frobenius import frobenius_svm, selection_features, w_mm


def _small(seed=0, n=3, T=4, d=7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, T, d))
    y = np.array([1.0, -1.0, 1.0])[:n]
    u = rng.standard_normal(d)
    W = 0.3 * rng.standard_normal((d, d))
    return X, y, u, W


def test_logit_convention_is_xt_W_x1():
    X, _, _, W = _small()
    a = sa.logits(X, W)
    for i in range(X.shape[0]):
        for t in range(X.shape[1]):
            assert a[i, t] == pytest.approx(X[i, t] @ W @ X[i, 0], rel=1e-12)


def _fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        g[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_W_gradient_matches_finite_differences():
    X, y, u, W = _small()
    gamma = token_scores(X, y, u)
    out = sa.wonly_grad_fn(X, gamma)({"W": W})
    G, ls = out["grads"]["W"]
    grad = np.exp(ls) * G
    num = _fd_grad(lambda w: float(sa.risk(X, y, w, u)), W)
    assert np.max(np.abs(grad - num)) < 1e-8
    assert out["loss"] == pytest.approx(float(sa.risk(X, y, W, u)), rel=1e-13)


def test_joint_gradient_matches_finite_differences():
    X, y, u, W = _small(seed=1)
    out = sa.joint_grad_fn(X, y)({"W": W, "u": u})
    gW = np.exp(out["grads"]["W"][1]) * out["grads"]["W"][0]
    gu = np.exp(out["grads"]["u"][1]) * out["grads"]["u"][0]
    assert np.max(np.abs(gW - _fd_grad(lambda w: float(sa.risk(X, y, w, u)), W))) < 1e-8
    assert np.max(np.abs(gu - _fd_grad(lambda v: float(sa.risk(X, y, W, v)), u))) < 1e-8
    assert out["log_loss"] == pytest.approx(np.log(out["loss"]), rel=1e-12)


def test_batched_gradient_equals_per_element():
    X, y, u, W = _small()
    Xb = np.stack([X, 2 * X])
    Wb = np.stack([W, -W])
    gamma = token_scores(Xb, y, u)
    out = sa.wonly_grad_fn(Xb, gamma)({"W": Wb})
    for b in range(2):
        one = sa.wonly_grad_fn(Xb[b], gamma[b])({"W": Wb[b]})
        gb = np.exp(out["grads"]["W"][1][b]) * out["grads"]["W"][0][b]
        g1 = np.exp(one["grads"]["W"][1]) * one["grads"]["W"][0]
        np.testing.assert_allclose(gb, g1, rtol=1e-12, atol=1e-15)


def test_excess_loss_is_cancellation_free():
    data = fd.orth_data(seed=0)
    gamma = data.gamma
    f = sa.wonly_grad_fn(data.X, gamma)
    W_mm = w_mm(data.X, data.opt).W
    loss_star = np.mean(loss_value(gamma[np.arange(10), data.opt], "logistic"))
    # moderate W: the direct difference is accurate and agrees
    out = f({"W": 0.5 * W_mm})
    assert out["excess"] == pytest.approx(out["loss"] - loss_star, rel=1e-9)
    # saturated W (logit gaps ≈ 60): the direct difference is rounding noise, the log-space one is
    # not
    out = f({"W": 60.0 * W_mm})
    assert abs(out["loss"] - loss_star) < 1e-15
    s = softmax(sa.logits(data.X, 60.0 * W_mm))
    delta = np.sum(
        s * (gamma[np.arange(10), data.opt][:, None] - gamma), axis=1
    )  # Δ_i, no cancellation
    g_opt = gamma[np.arange(10), data.opt]
    expected = np.mean(delta / (1 + np.exp(g_opt)))  # log1p(σ(−γ)·expm1(Δ)) ≈ σ(−γ)Δ for tiny Δ
    assert 1e-30 < out["excess"] < 1e-20
    assert out["excess"] == pytest.approx(expected, rel=1e-10)


def test_one_minus_sopt_in_log_space():
    X, y, u, W = _small()
    gamma = token_scores(X, y, u)
    opt = sa.opt_tokens(gamma)
    log_s = np.log(softmax(sa.logits(X, W)))
    direct = 1 - np.mean(np.exp(log_s)[np.arange(3), opt])
    assert np.exp(sa.log_one_minus_sopt(log_s, opt)) == pytest.approx(direct, rel=1e-12)
    # along W_mm every logit gap of the σ = 0 data is exactly c:
    # 1 − s_opt = (T−1)e^{−c} / (1 + (T−1)e^{−c})
    data = fd.orth_data(seed=0)
    W_mm = w_mm(data.X, data.opt).W
    for c in (5.0, 1000.0):  # e^{−1000} underflows float64; the log-space value does not
        val = sa.log_one_minus_sopt(log_softmax(sa.logits(data.X, c * W_mm)), data.opt)
        assert val == pytest.approx(np.log(5.0) - c - np.log1p(5.0 * np.exp(-c)), abs=1e-8)


# ------------------------------------------------------------------------------------------ W_mm


def test_wmm_dual_matches_primal_small_instance():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 4, 5))
    gamma = rng.standard_normal((3, 4))
    opt = np.argmax(gamma, axis=1)
    dual = w_mm(X, opt, method="dual")
    primal = w_mm(X, opt, method="primal")
    assert dual.qp.x.shape == (25,)
    np.testing.assert_allclose(dual.W, primal.W, atol=1e-6)
    assert dual.norm == pytest.approx(primal.norm, abs=1e-6)


def test_wmm_default_instance_feasible_closed_form_and_margins_through_model():
    data = fd.orth_data(n=10, T=6, d=64, sigma=0.0, seed=0)
    sol = w_mm(data.X, data.opt)  # auto → dual: 50 multipliers instead of 4,096 variables
    assert sol.qp.dual.shape == (50,)
    assert sol.margins.min() >= 1 - 1e-7
    assert sol.active(1e-6).sum() == 50  # σ = 0: every constraint is active
    # per sequence: min ‖w‖ s.t. (x_opt − x_τ)ᵀw ≥ 1 over orthonormal tokens gives ‖w‖² = (T−1)/T
    assert sol.norm == pytest.approx(np.sqrt(10 * 5 / 6), abs=1e-6)
    a = sa.logits(data.X, sol.W)
    _, ii, tt = selection_features(data.X, data.opt)
    np.testing.assert_allclose(a[ii, data.opt[ii]] - a[ii, tt], sol.margins, atol=1e-10)


def test_frobenius_svm_general_rows():
    # min ‖W‖_F s.t. W_00 ≥ 1 and W_00 + W_11 ≥ 3: only the second is active, W = diag(1.5, 1.5)
    M = np.zeros((2, 2, 2))
    M[0, 0, 0] = 1
    M[1, 0, 0] = M[1, 1, 1] = 1
    sol = frobenius_svm(M, [1.0, 3.0], method="primal")
    np.testing.assert_allclose(sol.W, np.diag([1.5, 1.5]), atol=1e-7)


# ------------------------------------------------------------------------------------------ data


def test_orth_data_properties():
    data = fd.orth_data(n=10, T=6, d=64, sigma=0.0, seed=1)
    flat = data.X.reshape(60, 64)
    np.testing.assert_allclose(flat @ flat.T, np.eye(60), atol=1e-12)
    np.testing.assert_allclose(data.meta["spare"] @ flat.T, 0, atol=1e-12)
    g = data.gamma
    np.testing.assert_allclose(g[np.arange(10), data.opt], 1.0, atol=1e-12)
    others = np.delete(g, np.ravel_multi_index((np.arange(10), data.opt), g.shape))
    assert others.min() >= -1 and others.max() <= 0.5
    assert len(np.unique(np.round(others, 12))) == len(
        others
    )  # non-opt scores differ (pitfall §2.1)
    assert data.score_gap >= 0.5 - 1e-12
    np.testing.assert_array_equal(data.y, [1, -1] * 5)
    again = fd.orth_data(n=10, T=6, d=64, sigma=0.0, seed=1)
    np.testing.assert_array_equal(again.X, data.X)
    with pytest.raises(ValueError):
        fd.orth_data(n=10, T=6, d=60)


def test_noisy_orth_data_keeps_unique_opt():
    data = fd.orth_data(sigma=0.1, seed=2)
    assert data.score_gap > 0
    np.testing.assert_array_equal(data.opt, np.argmax(data.gamma, axis=1))


@pytest.mark.parametrize("opt_at_query", [True, False])
def test_antipodal_data(opt_at_query):
    data = fd.antipodal_data(seed=0, opt_at_query=opt_at_query)
    ustar = data.meta["ustar"]
    opt_tokens = data.X[np.arange(10), data.opt]
    np.testing.assert_allclose(opt_tokens, data.y[:, None] * ustar[None, :], atol=1e-12)
    np.testing.assert_allclose(data.u, ustar)
    g = data.gamma
    np.testing.assert_allclose(g[np.arange(10), data.opt], 1.0, atol=1e-12)
    assert data.score_gap >= 0.5 - 1e-12
    if not opt_at_query:
        assert np.all(data.opt >= 1)


def test_gaussian_data_umm_consistent():
    data = fd.gaussian_data(n=20, T=5, d=32, sigma=0.3, seed=0)
    np.testing.assert_array_equal(np.argmax(data.gamma, axis=1), data.opt)
    mask = np.ones((20, 5), dtype=bool)
    mask[np.arange(20), data.opt] = False
    assert np.all(data.X[mask][:, 0] == 0.0)  # noise tokens carry no signal
    np.testing.assert_allclose(data.X[np.arange(20), data.opt, 0], data.y)
    margins = data.y * (data.X[np.arange(20), data.opt] @ data.u)
    assert margins.min() >= 1 - 1e-7  # u_mm is the hard-margin SVM on the opt tokens
