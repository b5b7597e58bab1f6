"""Gradient-norm probe: ‖g_B‖ over the first minibatch steps of a short plain-SGD run.

The fastrates figures (docs/papers/fastrates.md#step-size-matching) match the step size of SNGD to
SGD: η = lr × the median gradient norm SGD sees over its first steps.  The probe is a short run of
the one training loop, :func:`attnbias.train.engine.fit`, on a copy of the model with the run's
seed, so it draws exactly the minibatches (permutation, wrap-around, augmentation draws) and the
dropout masks that the run's own ``fit`` draws, and the norms are read through ``fit``'s
``after_backward`` hook.
"""

from __future__ import annotations

import copy

import torch

from ..optim.stochastic import global_grad_norm
from .engine import TrainConfig, fit


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
    """‖g_B‖ (:func:`attnbias.optim.stochastic.global_grad_norm`) at each of the first ``steps``
    steps of plain SGD with learning rate ``lr``, trained by :func:`fit` on a copy of ``model``
    with seed ``seed`` (the same minibatches as a ``fit`` run with that seed and batch size).
    ``model`` is not changed."""
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
        after_backward=lambda m, step: norms.append(float(global_grad_norm(m.parameters()))),
    )
    del probe
    return norms
