"""nucnorm model and dynamics (docs/papers/nucnorm.md): the log-space K/Q gradient against the
direct formula and finite differences, conservation laws, the diagonal reparameterisation, the
generator and the objective-ratio invariant."""

import numpy as np
import pytest

from attnbias.data import nucnorm as dn
from attnbias.experiments.nucnorm import objective_ratio
from attnbias.models import kq
from attnbias.optim.fullbatch import run
from attnbias.svm.nuclear import frobenius_svm, margin, nuclear_svm


def _instance():
    return dn.random_instance(4, 3, 5, seed=11)


def _risk(inst, W):
    a = kq.logits(inst.X, inst.z, W)
    s = np.exp(a - a.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    f = np.sum(s * (inst.X @ inst.v), -1)
    return np.mean(np.exp(-inst.y * f))


def _direct_grad(inst, W):
    """The gradient (docs/papers/nucnorm.md#model-and-conventions) in plain float64:
    −(1/n) Σ_i y_i e^{−y_i f_i} Σ_t s_it (g_it − f_i) x_it z_iᵀ."""
    a = kq.logits(inst.X, inst.z, W)
    s = np.exp(a - a.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    g = inst.X @ inst.v
    f = np.sum(s * g, -1)
    coef = -(inst.y * np.exp(-inst.y * f))[:, None] * s * (g - f[:, None]) / len(f)
    return np.einsum("nt,ntd,ne->de", coef, inst.X, inst.z)


def _scaled(grad):
    G, log_scale = grad
    return G * np.exp(log_scale)


def test_log_space_gradient_matches_direct_formula_and_finite_differences():
    inst = _instance()
    rng = np.random.default_rng(0)
    K, Q = 0.7 * rng.standard_normal((2, 5, 5))
    out = kq.kq_grad_fn(inst.X, inst.z, inst.gamma)({"K": K, "Q": Q})
    GW = _direct_grad(inst, K @ Q.T)
    np.testing.assert_allclose(_scaled(out["grads"]["K"]), GW @ Q, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(_scaled(out["grads"]["Q"]), GW.T @ K, rtol=1e-9, atol=1e-14)
    assert out["loss"] == pytest.approx(_risk(inst, K @ Q.T), rel=1e-12)
    # central finite differences of the risk in K
    h = 1e-6
    fd = np.zeros_like(K)
    for idx in np.ndindex(K.shape):
        E = np.zeros_like(K)
        E[idx] = h
        fd[idx] = (_risk(inst, (K + E) @ Q.T) - _risk(inst, (K - E) @ Q.T)) / (2 * h)
    np.testing.assert_allclose(_scaled(out["grads"]["K"]), fd, rtol=1e-6, atol=1e-10)


def test_gradient_survives_saturation():
    # far along a separating direction the direct gradient underflows to exactly 0; the scaled one
    # keeps a finite, non-zero direction
    inst = _instance()
    W = nuclear_svm(inst.features()).x
    assert np.all(_direct_grad(inst, 3000.0 * W) == 0.0)
    out = kq.forward(inst.X, inst.z, inst.gamma, 3000.0 * W)
    assert np.isfinite(out["log_scale"]) and out["log_scale"] < -700
    assert np.all(np.isfinite(out["GW"])) and np.max(np.abs(out["GW"])) > 0
    # L − L* stays measurable in log space where the plain difference is 0
    assert _risk(inst, 3000.0 * W) - inst.loss_star == 0.0
    assert np.isfinite(kq.log_excess_risk(out["log_s"], inst.gamma))


def test_log_excess_risk_matches_plain_difference():
    inst = _instance()
    W = 2.0 * nuclear_svm(inst.features()).x
    out = kq.forward(inst.X, inst.z, inst.gamma, W)
    plain = _risk(inst, W) - inst.loss_star
    assert plain > 1e-6
    assert np.exp(kq.log_excess_risk(out["log_s"], inst.gamma)) == pytest.approx(plain, rel=1e-9)


def test_kq_conservation_law():
    # each jointly normalised step changes KᵀK − QᵀQ by at most η²
    inst = dn.random_instance(5, 5, 6, seed=0)
    rng = np.random.default_rng(1)
    K0, Q0 = 0.05 * rng.standard_normal((2, 6, 6))
    N, eta = 300, 0.05
    tr = run(
        kq.kq_grad_fn(inst.X, inst.z, inst.gamma),
        {"K": K0[None], "Q": Q0[None]},
        N,
        lr=eta,
        record_at=[0, N],
    )
    K, Q = tr["params"]["K"][:, 0], tr["params"]["Q"][:, 0]
    C = np.swapaxes(K, -1, -2) @ K - np.swapaxes(Q, -1, -2) @ Q
    drift = np.linalg.norm(C[1] - C[0])
    assert drift <= N * eta**2
    assert np.linalg.norm(K[1] - K[0]) > 1.0  # the weights did move


def test_diag_conservation_law():
    inst = dn.random_instance(3, 3, 10, seed=2)
    F = kq.diag_features(inst.X, inst.z)
    rng = np.random.default_rng(2)
    xk, xq = 0.1 * rng.standard_normal((2, 10))
    N, eta = 300, 0.05
    tr = run(
        kq.diag_grad_fn(F, inst.gamma),
        {"xk": xk[None], "xq": xq[None]},
        N,
        lr=eta,
        record_at=[0, N],
    )
    c = tr["params"]["xk"][:, 0] ** 2 - tr["params"]["xq"][:, 0] ** 2
    assert np.max(np.abs(c[1] - c[0])) <= N * eta**2


def test_diag_model_is_the_restriction_of_kq_to_diagonal_weights():
    inst = _instance()
    rng = np.random.default_rng(4)
    xk, xq = rng.standard_normal((2, 5))
    F = kq.diag_features(inst.X, inst.z)
    d = kq.diag_grad_fn(F, inst.gamma)({"xk": xk, "xq": xq})
    f = kq.kq_grad_fn(inst.X, inst.z, inst.gamma)({"K": np.diag(xk), "Q": np.diag(xq)})
    assert d["loss"] == pytest.approx(f["loss"], rel=1e-13)
    np.testing.assert_allclose(
        _scaled(d["grads"]["xk"]), np.diag(_scaled(f["grads"]["K"])), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(
        _scaled(d["grads"]["xq"]), np.diag(_scaled(f["grads"]["Q"])), rtol=1e-12, atol=1e-15
    )


def test_reparameterisation_u_w_gives_the_same_beta():
    # Lemma 4.1: u = (ξ_k + ξ_q)/2, w = (ξ_k − ξ_q)/2, β = u² − w²; the map scales lengths by 1/√2,
    # so normalised steps of size η in (ξ_k, ξ_q) are steps of size η/√2 in (u, w)
    inst = dn.random_instance(3, 3, 10, seed=3)
    F = kq.diag_features(inst.X, inst.z)
    rng = np.random.default_rng(5)
    xk = 0.1 + 0.05 * rng.random(10)
    xq = 0.02 * rng.standard_normal(10)
    eta, N = 0.01, 100
    a = run(kq.diag_grad_fn(F, inst.gamma), {"xk": xk[None], "xq": xq[None]}, N, lr=eta)
    b = run(
        kq.uw_grad_fn(F, inst.gamma),
        {"u": (xk + xq)[None] / 2, "w": (xk - xq)[None] / 2},
        N,
        lr=eta / np.sqrt(2),
    )
    beta_a = a["params"]["xk"] * a["params"]["xq"]
    beta_b = b["params"]["u"] ** 2 - b["params"]["w"] ** 2
    np.testing.assert_allclose(beta_a, beta_b, atol=1e-8)
    assert np.max(np.abs(beta_a[-1] - beta_a[0])) > 0.1


def test_generator_stream_and_selection():
    inst = dn.random_instance(5, 5, 6, seed=0)
    assert inst.X.shape == (5, 5, 6) and inst.z.shape == (5, 6)
    np.testing.assert_allclose(np.linalg.norm(inst.X, axis=-1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(inst.z, axis=-1), 1.0)
    assert np.linalg.norm(inst.v) == pytest.approx(1.0)
    assert set(np.unique(inst.y)) <= {-1.0, 1.0}
    # the second illustrative draw of docs/papers/nucnorm.md#instances-and-selection: n = L = 3,
    # d = 8, seed 1 has ranks 2 against 3
    sel, sols = dn.select_instance(3, 3, 8, 1, require=("full", "rank_gap"))
    assert sel.seed == 1 and sel.meta["skipped"] == []
    # a rejecting premise skips seeds and records why; excluded seeds are never used
    calls = []

    def reject_first(inst, sols):
        calls.append(inst.seed)
        return (len(calls) > 1, "premise: test")

    sel2, _ = dn.select_instance(3, 3, 8, 1, require=("full",), accept=reject_first, exclude={2})
    assert sel2.seed == 3 and sel2.meta["skipped"] == [[1, "premise: test"]] and calls == [1, 3]
    st = dn.random_instance(3, 3, 8, seed=1, self_attention=True)
    np.testing.assert_array_equal(st.z, st.X[:, 0])


def test_objective_ratio_invariant():
    # W/γ(W) is feasible for both SVMs, so R ≥ 1 for every W with a positive margin
    # (docs/papers/nucnorm.md#model-and-conventions)
    inst = dn.random_instance(5, 5, 6, seed=0)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    rng = np.random.default_rng(6)
    W = Wn.x[None] + 0.3 * rng.standard_normal((200, 6, 6))
    gam = margin(M, W)
    assert np.sum(gam > 0) > 20
    s = np.linalg.svd(W, compute_uv=False)
    Rn = objective_ratio(s.sum(-1), gam, Wn.norm)
    Rf = objective_ratio(np.linalg.norm(W, axis=(-2, -1)), gam, Wf.norm)
    assert np.all(Rn[gam > 0] >= 1 - 1e-9) and np.all(Rf[gam > 0] >= 1 - 1e-9)
    assert np.all(np.isinf(Rn[gam <= 0]))
    assert objective_ratio(
        np.sum(np.linalg.svd(Wn.x, compute_uv=False)), margin(M, Wn.x), Wn.norm
    ) == pytest.approx(1.0, abs=1e-8)
