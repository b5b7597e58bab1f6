"""SGD probe: ‖g_B‖ and ℓ_B over the first minibatch steps of a short plain-SGD run.

The fastrates figures (docs/papers/fastrates.md#step-size-matching) match the step sizes of SNGD and
SPS to SGD's at the start: SNGD's η = lr × the median ‖g_B‖ SGD sees over its first steps, SPS's
c = the median of ℓ_B/(lr ‖g_B‖²) there (its Polyak step is then SGD's rate lr at the start and
free to adapt afterwards).  The probe is a short run of
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


def sgd_probe(
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
) -> dict[str, list[float]]:
    """``{"grad_norms": [...], "losses": [...]}``: ‖g_B‖
    (:func:`attnbias.optim.stochastic.global_grad_norm`) and the minibatch loss ℓ_B at each of the
    first ``steps`` steps of plain SGD with learning rate ``lr``, trained by :func:`fit` on a copy
    of ``model`` with seed ``seed`` (the same minibatches as a ``fit`` run with that seed and batch
    size).  ``model`` is not changed."""
    probe = copy.deepcopy(model)
    norms: list[float] = []
    losses: list[float] = []

    def record(m, step, loss):
        norms.append(float(global_grad_norm(m.parameters())))
        losses.append(float(loss))

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
        after_backward=record,
    )
    del probe
    return {"grad_norms": norms, "losses": losses}
