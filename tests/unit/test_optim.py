"""The batched full-batch runner: update rules, the zero-gradient guard, recording."""

import numpy as np
import pytest

from attnbias.data import synthetic as syn
from attnbias.models import prompt_grad_fn
from attnbias.optim import run


def quadratic_grad_fn(params):
    """L(x) = ½‖x‖² per batch element (gradient x, scale 1)."""
    x = params["x"]
    return {"loss": 0.5 * np.sum(x * x, -1), "grads": {"x": (x, np.zeros(x.shape[0]))}}


def test_gd_on_quadratic_is_geometric():
    traj = run(quadratic_grad_fn, {"x": np.array([[2.0, -1.0]])}, 10, method="gd", lr=0.25)
    np.testing.assert_allclose(traj["params"]["x"][-1], np.array([[2.0, -1.0]]) * 0.75**10)


def test_ngd_takes_unit_steps():
    traj = run(quadratic_grad_fn, {"x": np.array([[3.0, 4.0]])}, 3, method="ngd", lr=0.5)
    np.testing.assert_allclose(
        np.linalg.norm(traj["params"]["x"][:, 0], axis=-1), [5.0, 4.5, 4.0, 3.5]
    )


def test_polyak_on_quadratic_jumps_to_minimum():
    # η = (L − 0)/‖g‖² = ½ → x − ½x: halves every step
    traj = run(
        quadratic_grad_fn, {"x": np.array([[2.0, 2.0]])}, 2, method="polyak", lr=1.0, loss_star=0.0
    )
    np.testing.assert_allclose(traj["params"]["x"][:, 0], [[2, 2], [1, 1], [0.5, 0.5]])


def test_polyak_cap():
    traj = run(
        quadratic_grad_fn,
        {"x": np.array([[2.0, 0.0]])},
        1,
        method="polyak",
        lr=1.0,
        loss_star=0.0,
        polyak_cap=0.1,
    )
    np.testing.assert_allclose(traj["params"]["x"][-1, 0], [1.8, 0.0])


def test_zero_gradient_stops_cleanly_per_batch_element():
    # element 0: all scores equal → gradient exactly 0 → frozen at t = 0; element 1 moves
    K = np.array([[[[1.0, 0.0], [0.0, 1.0]]], [[[1.0, 0.0], [0.0, 1.0]]]])
    gamma = np.array([[[0.5, 0.5]], [[1.0, 0.0]]])
    traj = run(prompt_grad_fn(K, gamma), {"p": np.zeros((2, 2))}, 20, method="ngd", lr=0.1)
    assert traj["stopped_at"].tolist() == [0, -1]
    P = traj["params"]["p"]
    assert np.all(np.isfinite(P))
    np.testing.assert_array_equal(P[:, 0], 0.0)
    assert np.linalg.norm(P[-1, 1]) == pytest.approx(2.0)


def test_long_ngd_run_never_nans():
    """Far past float64 softmax underflow (~5,000 steps) the log-space gradient keeps moving."""
    prob = syn.fig1_single_input(local=False)
    traj = run(
        prompt_grad_fn(prob.K[None], prob.gamma[None]),
        {"p": np.array([[0.0, 1.0, 0.0]])},
        8000,
        method="ngd",
        lr=0.1,
        record_at=[8000],
    )
    p = traj["params"]["p"][-1, 0]
    assert np.all(np.isfinite(p)) and traj["stopped_at"][0] == -1
    assert np.linalg.norm(p) == pytest.approx(1.0 + 800.0, rel=1e-3)
    gmm = np.array([-0.1, 1.0])
    assert p[:2] @ gmm / np.linalg.norm(p[:2]) / np.linalg.norm(gmm) > 0.99999


def test_record_at_and_observe():
    traj = run(
        quadratic_grad_fn,
        {"x": np.ones((3, 2))},
        5,
        method="gd",
        lr=0.1,
        record_at=[0, 5],
        observe=lambda p, o: {"n": np.linalg.norm(p["x"], axis=-1)},
    )
    assert traj["t"].tolist() == [0, 5]
    assert traj["n"].shape == (2, 3) and traj["loss"].shape == (2, 3)


def test_bad_method_rejected():
    with pytest.raises(ValueError, match="unknown method"):
        run(quadratic_grad_fn, {"x": np.ones((1, 2))}, 1, method="adam")


def test_polyak_uses_log_excess_below_float_range():
    """L − L* = e^{-800} underflows as a float; its log still gives the exact Polyak step."""

    def grad_fn(params):
        return {
            "loss": np.zeros(1),
            "log_excess": np.array([-800.0]),
            "grads": {"x": (np.ones((1, 1)), np.array([-800.0]))},  # ‖g‖ = e^{-800}
        }

    traj = run(grad_fn, {"x": np.zeros((1, 1))}, 1, method="polyak", lr=1.0)
    # η = e^{-800} / e^{-1600} = e^{800}, step η‖g‖ = 1, though both factors are outside float64
    np.testing.assert_allclose(traj["params"]["x"][-1], [[-1.0]])


def test_update_leaving_the_floats_freezes_instead_of_nan():
    def grad_fn(params):
        return {"loss": np.zeros(2), "grads": {"x": (np.ones((2, 1)), np.array([0.0, 800.0]))}}

    traj = run(grad_fn, {"x": np.zeros((2, 1))}, 3, method="gd", lr=1.0)
    assert np.all(np.isfinite(traj["params"]["x"]))
    assert traj["stopped_at"].tolist() == [-1, 0]
    np.testing.assert_allclose(traj["params"]["x"][-1, 0], [-3.0])
