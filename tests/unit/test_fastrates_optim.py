"""fastrates: SNGD and SPS (torch), against hand-computed steps and the full-batch runner."""

import math

import numpy as np
import pytest
import torch

from attnbias.data import fastrates as fd
from attnbias.models import selfattn as sa
from attnbias.optim.fullbatch import run
from attnbias.optim.stochastic import SNGD, SPS, global_grad_norm, squared_norm


def _quadratic(theta0, target):
    """f(θ) = ½‖θ − θ*‖² with θ a float64 leaf; returns (θ, closure)."""
    theta = torch.tensor(theta0, dtype=torch.float64, requires_grad=True)
    tgt = torch.tensor(target, dtype=torch.float64)

    def closure():
        theta.grad = None
        loss = 0.5 * ((theta - tgt) ** 2).sum()
        loss.backward()
        return loss

    return theta, closure


def test_sngd_step_by_hand():
    theta, closure = _quadratic([3.0, 4.0], [0.0, 0.0])
    opt = SNGD([theta], lr=0.5, eps=0.0)
    opt.step(closure)  # g = (3, 4), ‖g‖ = 5 → θ − 0.5·(0.6, 0.8)
    np.testing.assert_allclose(theta.detach().numpy(), [2.7, 3.6], rtol=0, atol=1e-15)
    assert opt.last["grad_norm"] == pytest.approx(5.0)
    opt = SNGD(
        [theta], lr=0.5
    )  # default ε = 1e-8: step η‖g‖/(‖g‖ + ε) with g = θ = (2.7, 3.6), ‖g‖ = 4.5
    opt.step(closure)
    step = 0.5 * 4.5 / (4.5 + 1e-8)
    np.testing.assert_allclose(
        theta.detach().numpy(), [2.7 - 0.6 * step, 3.6 - 0.8 * step], rtol=0, atol=1e-14
    )


def test_sngd_uses_the_global_norm_across_groups_and_skips_missing_grads():
    a = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.0, 0.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)  # no gradient
    opt = SNGD([{"params": [a]}, {"params": [b, c], "lr": 2.0}], lr=1.0, eps=0.0)
    a.grad = torch.tensor([3.0], dtype=torch.float64)
    b.grad = torch.tensor([0.0, 4.0], dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [3.0 - 3.0 / 5.0])
    np.testing.assert_allclose(b.detach().numpy(), [0.0, -2.0 * 4.0 / 5.0])
    assert c.item() == 1.0
    a.grad.zero_()
    b.grad.zero_()
    before = a.detach().clone()
    opt.step()  # zero gradient: no move, no NaN
    assert torch.equal(a.detach(), before)


def test_sps_quadratic_jumps_to_the_minimum_and_respects_the_cap():
    # f = ½‖θ − θ*‖², f* = 0: ‖g‖² = 2f, so with c = ½ the Polyak step is exactly 1 → θ*
    theta, closure = _quadratic([3.0, -1.0], [1.0, 2.0])
    opt = SPS([theta], lr=10.0, c=0.5)
    opt.step(closure)
    np.testing.assert_allclose(theta.detach().numpy(), [1.0, 2.0], atol=1e-15)
    assert opt.last["polyak_step"] == pytest.approx(1.0)
    theta, closure = _quadratic([3.0, -1.0], [1.0, 2.0])
    opt = SPS([theta], lr=0.25, c=0.5)  # capped: θ − 0.25 (θ − θ*)
    opt.step(closure)
    np.testing.assert_allclose(theta.detach().numpy(), [2.5, -0.25], atol=1e-15)
    # c = 1 halves the uncapped step; f* above the loss gives no step
    theta, closure = _quadratic([3.0, -1.0], [1.0, 2.0])
    opt = SPS([theta], lr=math.inf, c=1.0)
    opt.step(closure)
    np.testing.assert_allclose(theta.detach().numpy(), [2.0, 0.5], atol=1e-15)
    theta, closure = _quadratic([3.0, -1.0], [1.0, 2.0])
    opt = SPS([theta], lr=1.0, c=0.5, f_star=100.0)
    opt.step(closure)
    np.testing.assert_allclose(theta.detach().numpy(), [3.0, -1.0])


def test_sps_loss_argument_and_logistic_closed_form():
    # 1-D logistic ℓ(w) = log(1 + e^{−wx}) from w = 0, f* = 0: g = −x/2, step = log 2 / (c x²/4)
    x = 2.0
    w = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.softplus(-w * x).sum()
    loss.backward()
    SPS([w], lr=math.inf, c=1.0).step(loss=loss)
    assert w.item() == pytest.approx(math.log(2) / (x * x / 4) * x / 2, rel=1e-14)
    with pytest.raises(ValueError):
        SPS([w], lr=1.0).step()


def _torch_risk(X, gamma, W):
    """Reference forward pass for the test (autograd supplies the gradient)."""
    a = torch.einsum("ntd,de,ne->nt", X, W, X[:, 0])
    z = (torch.softmax(a, dim=-1) * gamma).sum(-1)
    return torch.nn.functional.softplus(-z).mean()


@pytest.mark.parametrize("method", ["ngd", "polyak"])
def test_full_batch_torch_optimisers_equal_the_runner(method):
    data = fd.orth_data(n=4, T=3, d=13, sigma=0.0, seed=0)
    gamma = data.gamma
    steps, lr = 5, 0.7
    ref = run(
        sa.wonly_grad_fn(data.X[None], gamma[None]),
        {"W": np.zeros((1, 13, 13))},
        steps,
        method=method,
        lr=1.0 if method == "polyak" else lr,
    )
    X = torch.tensor(data.X)
    G = torch.tensor(gamma)
    W = torch.zeros(13, 13, dtype=torch.float64, requires_grad=True)
    g_opt = gamma[np.arange(4), data.opt]
    loss_star = float(np.mean(np.logaddexp(0.0, -g_opt)))
    opt = (
        SNGD([W], lr=lr, eps=0.0)
        if method == "ngd"
        else SPS([W], lr=math.inf, c=1.0, f_star=loss_star)
    )

    def closure():
        W.grad = None
        loss = _torch_risk(X, G, W)
        loss.backward()
        return loss

    for t in range(1, steps + 1):
        opt.step(closure)
        np.testing.assert_allclose(
            W.detach().numpy(), ref["params"]["W"][t, 0], rtol=1e-9, atol=1e-11
        )
    if method == "ngd":
        assert np.linalg.norm(ref["params"]["W"][steps, 0]) == pytest.approx(lr * steps, rel=0.05)


def test_full_batch_sngd_on_joint_training_equals_runner():
    data = fd.gaussian_data(n=6, T=3, d=5, sigma=0.3, seed=1)
    steps, lr = 4, 0.3
    rng = np.random.default_rng(0)
    W0, u0 = 0.1 * rng.standard_normal((5, 5)), 0.1 * rng.standard_normal(5)
    ref = run(
        sa.joint_grad_fn(data.X[None], data.y[None]),
        {"W": W0[None], "u": u0[None]},
        steps,
        method="ngd",
        lr=lr,
        normalize="joint",
    )
    X, y = torch.tensor(data.X), torch.tensor(data.y)
    W = torch.tensor(W0, requires_grad=True)
    u = torch.tensor(u0, requires_grad=True)
    opt = SNGD([W, u], lr=lr, eps=0.0)

    def closure():
        opt.zero_grad()
        loss = _torch_risk(X, y[:, None] * (X @ u), W)
        loss.backward()
        return loss

    for t in range(1, steps + 1):
        opt.step(closure)
        np.testing.assert_allclose(
            W.detach().numpy(), ref["params"]["W"][t, 0], rtol=1e-9, atol=1e-12
        )
        np.testing.assert_allclose(
            u.detach().numpy(), ref["params"]["u"][t, 0], rtol=1e-9, atol=1e-12
        )


def test_runner_polyak_with_model_excess_matches_closed_form_first_step():
    # From W₀ = 0 every softmax is uniform: the first Polyak step is (L₀ − L*) / ‖∇L₀‖² along −∇L₀
    data = fd.orth_data(seed=3)
    f = sa.wonly_grad_fn(data.X, data.gamma)
    out = f({"W": np.zeros((64, 64))})
    g = np.exp(out["grads"]["W"][1]) * out["grads"]["W"][0]
    eta = (out["loss"] - np.mean(np.logaddexp(0.0, -data.gamma[np.arange(10), data.opt]))) / np.sum(
        g * g
    )
    traj = run(f, {"W": np.zeros((64, 64))}, 1, method="polyak", lr=1.0)
    np.testing.assert_allclose(traj["params"]["W"][1], -eta * g, rtol=1e-10, atol=1e-15)
    assert out["excess"] == pytest.approx(
        out["loss"] - np.mean(np.logaddexp(0.0, -data.gamma[np.arange(10), data.opt])), rel=1e-12
    )


@pytest.mark.parametrize("n", [1, 4095, 4096, 3 * 4096 + 17, 11_720_448])
def test_squared_norm_matches_a_float64_reference_at_every_size(n):
    """The chunked float32 reduction agrees with a float64 sum to float32 rounding (2e-7), also
    for the 11.7M-entry embedding gradient where a single float32 reduction is off by ≈ 4e-4."""
    g = torch.randn(n, generator=torch.Generator().manual_seed(n)) * 3.0 + 0.5
    ref = g.double().pow(2).sum().item()
    assert squared_norm(g).dtype == torch.float64
    assert squared_norm(g).item() == pytest.approx(ref, rel=2e-7)
    assert squared_norm(g.double()).item() == pytest.approx(ref, rel=1e-13)
    half = g.bfloat16()
    assert squared_norm(half).item() == pytest.approx(half.double().pow(2).sum().item(), rel=5e-6)


def test_global_grad_norm_is_the_norm_over_every_gradient_and_skips_missing_ones():
    a = torch.zeros(3, requires_grad=True)
    b = torch.zeros(2, 2, requires_grad=True)
    c = torch.zeros(1, requires_grad=True)  # no gradient
    a.grad = torch.tensor([1.0, 2.0, 2.0])
    b.grad = torch.tensor([[4.0, 0.0], [0.0, 0.0]])
    assert global_grad_norm([a, b, c]).item() == pytest.approx(math.sqrt(25.0), rel=1e-15)
    assert global_grad_norm([c]).item() == 0.0


def test_global_grad_norm_is_bit_identical_to_summing_squared_norms():
    """The fused reduction of the short tensors changes no bit: the same float64 sum of each
    tensor's squared_norm, in order, for short, chunk-sized and long tensors (float32, float64)."""
    torch.manual_seed(0)
    sizes = (1, 3, 48, 4095, 4096, 9000, 64)
    params = [torch.zeros(n, requires_grad=True) for n in sizes]
    params.append(torch.zeros(5, dtype=torch.float64, requires_grad=True))
    for p in params:
        p.grad = torch.randn_like(p) * 7
    params[2].grad = None
    ref = torch.stack([squared_norm(p.grad) for p in params if p.grad is not None]).sum().sqrt()
    assert torch.equal(global_grad_norm(params), ref)


def _quadratic_steps(opt_cls, scales, **kw):
    """Steps of ``opt_cls`` on ½‖s·w‖² (loss and gradient scaled by ``s`` at each step)."""
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = opt_cls([w], **kw)
    for s in scales:
        opt.zero_grad()
        loss = 0.5 * (s * w).pow(2).sum()
        loss.backward()
        opt.step(loss=loss) if opt_cls is SPS else opt.step()
    return opt


def test_sps_own_step_counts_the_steps_below_the_cap_and_survives_a_checkpoint():
    # the Polyak step of ½s²‖w‖² is 1/(c s²) = 2/s² at c = 0.5: below a cap of 10 for s = 1
    free = _quadratic_steps(SPS, [1.0] * 4, lr=10.0, c=0.5)
    assert free.own_step()["fraction"] == 1.0 and free.own_step()["steps"] == 4
    capped = _quadratic_steps(SPS, [1.0] * 4, lr=0.1, c=0.5)  # 2 > 0.1: the cap on every step
    assert capped.own_step()["own_steps"] == 0 and capped.own_step()["fraction"] == 0.0
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    again = SPS([w], lr=0.1, c=0.5)
    again.load_state_dict(capped.state_dict())
    assert again.own_step()["steps"] == 4


def test_sngd_own_step_is_zero_for_a_steady_gradient_norm_and_counts_the_departures():
    steady = _quadratic_steps(SNGD, [1.0] * 6, lr=1e-3)
    assert steady.own_step()["own_steps"] == 0
    # gradient norms ∝ s·‖w‖ with w nearly unchanged: 3 of 6 outside [0.8, 1.25] × the median
    varied = _quadratic_steps(SNGD, [1.0, 1.0, 1.0, 2.0, 0.5, 3.0], lr=1e-6)
    rec = varied.own_step()
    assert (rec["own_steps"], rec["steps"]) == (3, 6) and rec["fraction"] == 0.5
