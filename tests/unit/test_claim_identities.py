"""Identities that used to be recorded as claims (true by construction, so never evidence for a
paper): each is exercised here on the real computation code and on adversarial inputs.

- NGD from the origin: ‖θ_t‖ ≤ ηt (triangle inequality) — maxmargin Fig 4b, fastrates Figs 2/5/8;
- maxmargin Fig 5, C = 1: the two inputs are mirror images, so p_y ≡ 0 (symmetry);
- nucnorm p3: ξ_k(0) = ξ_q(0) stays equal under the flow, so β = ξ_k ⊙ ξ_q = ξ_k² ≥ 0;
- nucnorm p1: R_nuc, R_F ≥ 1 for every W with a positive margin (W/γ(W) is feasible);
- lowrank Figs 4/B: ‖ABᵀ‖_* ≤ ½(‖A‖² + ‖B‖²) (AM–GM; kept in the claim file as ``identity``).
"""

import numpy as np
import pytest

from attnbias.data import nucnorm as dn
from attnbias.data import synthetic as syn
from attnbias.experiments.nucnorm import objective_ratio
from attnbias.metrics.rank import balance_ratio, frobenius_bound, gap, nuclear_norm
from attnbias.models import kq, prompt_grad_fn
from attnbias.optim import run
from attnbias.svm.nuclear import frobenius_svm, margin, nuclear_svm
from attnbias.table.stages import run_stages

# --------------------------------------------------------------------------- NGD: ‖θ_t‖ ≤ ηt


def _adversarial_grad_fn(kind: str, B: int = 6, d: int = 5, seed: int = 0):
    """Gradients chosen to push ‖θ‖ as far as possible: a constant direction (equality case),
    directions aligned with θ, log-scales from −700 to +700, two blocks of very different size,
    and a batch element with a zero gradient."""
    rng = np.random.default_rng(seed)
    fixed = rng.standard_normal((B, d))
    log_scale = np.linspace(-700.0, 700.0, B)

    def grad_fn(params):
        x = params["x"]
        if kind == "constant":
            G = fixed.copy()
        elif kind == "along":  # −g ∥ θ: every step lengthens θ by exactly η
            G = -np.where(np.linalg.norm(x, axis=-1, keepdims=True) > 0, x, fixed)
        elif kind == "random":
            G = rng.standard_normal((B, d)) * 10.0 ** rng.uniform(-150, 150, (B, 1))
        else:
            raise ValueError(kind)
        G[0] = 0.0  # frozen element
        grads = {"x": (G, log_scale)}
        if "y" in params:  # a second block, 1e-200 times smaller
            grads["y"] = (rng.standard_normal(params["y"].shape) * 1e-200, log_scale)
        return {"loss": np.zeros(B), "grads": grads}

    return grad_fn


@pytest.mark.parametrize("kind", ["constant", "along", "random"])
@pytest.mark.parametrize("lr", [0.1, 1.0, 37.0])
@pytest.mark.parametrize("two_blocks", [False, True])
def test_ngd_norm_at_most_eta_t_on_adversarial_gradients(kind, lr, two_blocks):
    params0 = {"x": np.zeros((6, 5))}
    if two_blocks:
        params0["y"] = np.zeros((6, 3))
    steps = 300
    tr = run(_adversarial_grad_fn(kind), params0, steps, method="ngd", lr=lr)
    sq = sum(np.sum(v**2, axis=-1) for v in tr["params"].values())  # (R, B) joint norm²
    norm = np.sqrt(sq)
    bound = lr * tr["t"][:, None]
    assert np.all(norm <= bound * (1 + 1e-12)), float(np.max(norm - bound))
    np.testing.assert_array_equal(norm[:, 0], 0.0)  # zero gradient: frozen at the origin
    assert np.all(norm[-1, 1:] > lr)  # every other element moved: not vacuous
    if kind in ("constant", "along"):  # the bound is attained: it is tight, not loose
        np.testing.assert_allclose(norm[-1, 1:], lr * steps, rtol=1e-9)


def test_ngd_norm_bound_on_maxmargin_fig4_data():
    df, _ = run_stages("maxmargin", "fig4", dict(steps=400, lr_ngd=0.1, lr_gd=1.0))
    ngd = df[df.method == "ngd"]
    assert np.all(ngd.norm.to_numpy() <= 0.1 * ngd.t.to_numpy() * (1 + 1e-12) + 1e-15)
    # from a start p0 ≠ 0 the bound is ‖p0‖ + ηt; on the Fig 1(c) problem with p0 = (5, −5, 0)
    prob = syn.fig1c_problem()
    p0 = np.array([[5.0, -5.0, 0.0]])
    tr = run(prompt_grad_fn(prob.K[None], prob.gamma[None]), {"p": p0}, 300, lr=0.5)
    norm = np.linalg.norm(tr["params"]["p"][:, 0], axis=-1)
    assert np.all(norm <= np.linalg.norm(p0) + 0.5 * tr["t"] + 1e-12)


def test_ngd_norm_bound_on_fastrates_wonly_runs():
    df, meta = run_stages(
        "fastrates",
        "fig2",
        dict(n=4, T=3, d=16, sigma=0.0, seeds=[0, 1], lr=1.0, steps_gd=20, steps_fast=400),
    )
    ngd = df[df.method == "ngd"]
    assert np.all(ngd.norm_W.to_numpy() <= ngd.lr.to_numpy() * ngd.t.to_numpy() * (1 + 1e-12))


# --------------------------------------------------------------------- maxmargin Fig 5, C = 1


@pytest.mark.parametrize("lr,steps", [(0.1, 1000), (1.0, 3000)])
def test_fig5_c1_stays_on_the_axis_exactly(lr, steps):
    df, _ = run_stages("maxmargin", "fig5", dict(steps=steps, lr=lr, C_values=[1.0, 2.0]))
    c1, c2 = df[df.C == 1], df[df.C == 2]
    assert np.max(np.abs(c1.p2)) == 0.0  # mirror symmetry: exactly, for both losses
    assert np.max(np.abs(c2.p2)) > 1e-3  # the symmetry is what does it: C = 2 leaves the axis
    # also from a start on the axis far out (saturated softmax) and with the correlation loss
    prob = syn.fig5_problem(1.0)
    for loss in ("logistic", "correlation"):
        tr = run(
            prompt_grad_fn(prob.K[None], prob.gamma[None], loss),
            {"p": np.array([[40.0, 0.0, 0.0]])},
            500,
            lr=lr,
        )
        assert np.all(tr["params"]["p"][:, 0, 1] == 0.0)


# ----------------------------------------------------------------- nucnorm p3: β = ξ² ≥ 0


@pytest.mark.parametrize("lr", [0.05, 0.5])
def test_sign_locked_beta_is_a_square(lr):
    inst = dn.random_instance(3, 3, 8, seed=1)
    F = kq.diag_features(inst.X, inst.z)
    rng = np.random.default_rng(3)
    starts = np.stack(
        [
            np.full(8, 1e-3),  # the p3 start
            -np.full(8, 1e-3),  # negative and equal: still a square
            rng.standard_normal(8),  # mixed signs, order 1
            np.r_[np.zeros(4), 1e3 * np.ones(4)],  # zeros (never move) and huge entries
        ]
    )
    tr = run(kq.diag_grad_fn(F, inst.gamma), {"xk": starts, "xq": starts.copy()}, 2000, lr=lr)
    xk, xq = tr["params"]["xk"], tr["params"]["xq"]
    np.testing.assert_array_equal(xk, xq)  # ξ_k = ξ_q bit for bit at every step
    assert np.all(xk * xq >= 0.0)
    # the identity needs the locked start: a valid (α·1, 0) start reaches negative entries
    valid = run(
        kq.diag_grad_fn(F, inst.gamma),
        {"xk": np.full((1, 8), 0.5), "xq": np.zeros((1, 8))},
        2000,
        lr=lr,
    )
    assert np.min(valid["params"]["xk"][-1] * valid["params"]["xq"][-1]) < 0.0


# ------------------------------------------------------------------ nucnorm p1: R ≥ 1 for all W


def test_objective_ratios_at_least_one_on_adversarial_matrices():
    inst = dn.random_instance(5, 5, 6, seed=0)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    U, s, Vt = np.linalg.svd(Wn.x)
    cands = [
        Wn.x,  # the optimum itself (R_nuc = 1)
        Wf.x,  # the other SVM's optimum
        1e-8 * Wn.x,
        1e8 * Wf.x,  # scale does not matter
        s[0] * np.outer(U[:, 0], Vt[0]),  # rank one
        0.5 * (Wn.x + Wf.x),  # a convex combination
    ]
    rng = np.random.default_rng(0)
    cands += list(Wn.x + 1e-3 * rng.standard_normal((50, 6, 6)))  # near the optimum
    W = np.stack(cands)
    gam = margin(M, W)
    keep = gam > 0
    assert keep.sum() >= len(cands) - 10
    Rn = objective_ratio(np.linalg.svd(W, compute_uv=False).sum(-1), gam, Wn.norm)
    Rf = objective_ratio(np.linalg.norm(W, axis=(-2, -1)), gam, Wf.norm)
    assert np.all(Rn[keep] >= 1 - 1e-7) and np.all(Rf[keep] >= 1 - 1e-7)
    assert Rn[0] == pytest.approx(1.0, abs=1e-6) and Rf[1] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.isinf(objective_ratio(np.ones(2), np.array([0.0, -1.0]), Wn.norm)))


def test_objective_ratios_at_least_one_along_trained_kq_and_merged_runs():
    """The p1 computation (K, Q and merged W by normalised GD, ratios from the solver optima) at
    every step: R ≥ 1 wherever the margin is positive, from a random start and from a large
    one."""
    inst = dn.random_instance(3, 3, 8, seed=1)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    rng = np.random.default_rng(2)
    K0 = np.stack([0.05 * rng.standard_normal((8, 8)), 3.0 * rng.standard_normal((8, 8))])
    Q0 = np.stack([0.05 * rng.standard_normal((8, 8)), 3.0 * rng.standard_normal((8, 8))])
    tr = run(kq.kq_grad_fn(inst.X, inst.z, inst.gamma), {"K": K0, "Q": Q0}, 3000, lr=0.05)
    W_kq = tr["params"]["K"] @ np.swapaxes(tr["params"]["Q"], -1, -2)
    tm = run(kq.merged_grad_fn(inst.X, inst.z, inst.gamma), {"W": np.zeros((1, 8, 8))}, 3000,
             lr=0.05)  # fmt: skip
    for W in (W_kq, tm["params"]["W"]):
        gam = margin(M, W)
        assert np.sum(gam > 0) > W.shape[0] * W.shape[1] // 2  # mostly separating: not vacuous
        Rn = objective_ratio(np.linalg.svd(W, compute_uv=False).sum(-1), gam, Wn.norm)
        Rf = objective_ratio(np.linalg.norm(W, axis=(-2, -1)), gam, Wf.norm)
        assert np.min(Rn) >= 1 - 1e-9 and np.min(Rf) >= 1 - 1e-9


# ------------------------------------------------------------ lowrank: ‖ABᵀ‖_* ≤ ½(‖A‖² + ‖B‖²)


def test_nuclear_norm_never_exceeds_the_frobenius_bound_adversarial():
    rng = np.random.default_rng(0)
    cases = [
        (rng.standard_normal((8, 3)), rng.standard_normal((8, 3))),
        (1e150 * rng.standard_normal((6, 2)), 1e-150 * rng.standard_normal((6, 2))),  # imbalance
        (np.zeros((5, 2)), rng.standard_normal((5, 2))),  # a zero factor
        (rng.standard_normal((1000, 2)), rng.standard_normal((7, 2))),  # tall, different sizes
        (rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 4))),
    ]
    # balanced factors A = UΣ^½, B = VΣ^½ attain the bound (the equality case)
    U, s, Vt = np.linalg.svd(rng.standard_normal((6, 6)))
    cases.append((U[:, :3] * np.sqrt(s[:3]), Vt[:3].T * np.sqrt(s[:3])))
    for A, B in cases:
        nn, fb = float(nuclear_norm(A, B)), float(frobenius_bound(A, B))
        assert nn <= fb * (1 + 1e-12), (nn, fb)
        assert 0.0 <= float(balance_ratio(A, B)) <= 1 + 1e-12
        assert float(gap(A, B)) >= -1e-12 * max(fb, 1.0)
    A, B = cases[-1]
    assert float(balance_ratio(A, B)) == pytest.approx(1.0, abs=1e-12)
