"""Gradient-norm probe: ‖g_B‖ over the first minibatch steps of a short plain-SGD run.

The fastrates spec (§1.6) matches the step size of SNGD to SGD: η = lr × the median gradient norm
SGD sees over its first steps.  The probe is a short run of the one training loop,
:func:`attnbias.train.engine.fit`, on a copy of the model with the run's seed, so it draws exactly
the minibatches (permutation, wrap-around, augmentation draws) and the dropout masks that the
run's own ``fit`` draws, and the norms are read through ``fit``'s ``after_backward`` hook.
"""

from __future__ import annotations

import copy

import torch

from .engine import TrainConfig, fit


def grad_norm(model: torch.nn.Module) -> float:
    """Global L2 norm of the gradients of ``model`` (float64 sum over all parameters with one)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    return sum(float(g.detach().double().pow(2).sum()) for g in grads) ** 0.5


def sgd_probe_norms(
    model: torch.nn.Module,
    data: dict,
    loss_fn,
    batch_size: int,
    lr: float,
    steps: int,
    seed: int,
    device: torch.device,
    image_key: str | None = None,
    augment_pad: int = 0,
    augment_flip: bool = False,
) -> list[float]:
    """‖g_B‖ (:func:`grad_norm`) at each of the first ``steps`` steps of plain SGD with learning
    rate ``lr``, trained by :func:`fit` on a copy of ``model`` with seed ``seed`` (the same
    minibatches as a ``fit`` run with that seed and batch size).  ``model`` is not changed."""
    probe = copy.deepcopy(model)
    norms: list[float] = []
    cfg = TrainConfig(
        epochs=1,
        batch_size=batch_size,
        lr=lr,
        optimizer="sgd",
        seed=seed,
        steps_per_epoch=steps,
        augment_pad=augment_pad,
        augment_flip=augment_flip,
    )
    fit(
        probe,
        data,
        loss_fn,
        cfg,
        device,
        image_key=image_key,
        progress=False,
        after_backward=lambda m, step: norms.append(grad_norm(m)),
    )
    del probe
    return norms
