"""Figs 6–7 of Tarzanagh et al. 2023: ViT attention sparsification, trained by the deep-learning
engine (:mod:`attnbias.train`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...io import check_control
from ..settings import ViTShape, sweep

VIT_FIG7_COLUMNS = {
    "epoch": "epoch (0 = at initialisation)",
    "zeta": (
        "soft-sparsity ζ = 1/Σ s² of the renormalised, head-averaged last-layer [CLS] attention "
        "over patches, mean over the probe set and over the epoch's weight snapshots "
        "(meta zeta_snapshots)"
    ),
    "zeta_qk0": (
        "ζ as in `zeta`, with the last layer's W_q, W_k (and biases) put back to their values at "
        "initialisation, everything else (the token representations) as trained at that epoch"
    ),
    "peak": (
        "largest patch weight of the same renormalised map, mean over the probe set and the "
        "snapshots (the maps' concentration, Fig 6's claim)"
    ),
    "wnorm": "‖W_qᵀ W_k‖_F of the last attention layer",
    "train_loss": "mean training cross-entropy over the epoch (NaN at epoch 0)",
    "train_acc": "mean training-batch accuracy over the epoch (NaN at epoch 0)",
    "probe_acc": "accuracy on the probe (held-out) set",
}
VIT_FIG6_COLUMNS = {
    "epoch": "epoch at which the map was taken",
    "image": "index of the fixed image (first test image of each class)",
    "label": "class of the image",
    "row": "patch row",
    "col": "patch column",
    "weight": "renormalised head-averaged [CLS] attention on that patch",
    "pixels": "the image's mean intensity on that patch (for the background), in [0, 1]",
    "train_acc": (
        "mean training-batch accuracy over that epoch (NaN at epoch 0), as Fig 7's `train_acc` "
        "(the regime check late_after_fit: the late phase starts after the fit)"
    ),
}


def _image_data(dataset: str, data_seed: int, cifar_source: str):
    from ...data.images import digits16, load_cifar10

    if dataset == "digits":
        return digits16(seed=data_seed)
    if dataset == "cifar10":
        return load_cifar10(cifar_source)
    raise ValueError(f"unknown dataset {dataset!r} (digits | cifar10)")


@dataclass(frozen=True, kw_only=True)
class ViTSettings(ViTShape):
    """The ``maxmargin: vit`` block (described in ``workflow/schemas/maxmargin.schema.yaml``):
    data, ViT and optimiser of the Figs 6-7 runs; ``seeds`` spans the sweep (a run gets its point
    ``seed``)."""

    cifar_source: str
    dataset: str
    optimizer: str
    lr: float
    momentum: float
    batch_size: int
    train_size: int
    epochs: int
    augment_pad: int
    augment_flip: bool
    probe_size: int
    zeta_snapshots: int
    map_epochs: list[int]
    map_classes: list[int]
    seeds: list[int] | None = sweep()
    compile: bool


def train_vit(
    settings: ViTSettings | Mapping,
    seed: int = 0,
    data_seed: int = 0,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
    control: str = "none",
):
    """Train a ViT (weight decay 0) from the training seed ``seed`` (initialisation, shuffling,
    augmentation; one of the block's ``seeds``) and record, every epoch, ζ of the last-layer [CLS]
    attention over a fixed probe set and ‖W_qᵀW_k‖_F; store the attention maps of fixed images at
    ``map_epochs``.

    ``train_size``: train on the first this many images of the (shuffled, stratified) training
    split; 0 = all of it.

    ``zeta_snapshots``: ζ (and ζ₀) of an epoch is the mean over this many evenly spaced snapshots
    of the weights within the epoch (the last at its end), which averages out the step-to-step
    jitter of a constant-lr run; 1 = the end of the epoch only.

    ``control="null"`` is the negative control: W_q, W_k and their biases of every layer stay at
    their initialisation (excluded from the optimiser), everything else trains as usual.

    Returns {"fig6": (maps DataFrame, meta), "fig7": (curves DataFrame, meta)}.
    """
    check_control(control)
    s = ViTSettings.of(settings)
    import torch

    from ...metrics import soft_sparsity
    from ...models.vit import (
        cls_attention,
        cls_attention_pair,
        combined_qk_norm,
        freeze_qk,
        qk_weights,
        timm_architecture,
    )
    from ...train import TrainConfig, fit, resolve_device

    device = resolve_device(accelerator)
    splits = _image_data(s.dataset, data_seed, s.cifar_source)
    channels = splits.x_train.shape[1]
    model = s.build_vit(channels, int(splits.y_train.max()) + 1, seed)
    if s.train_size > 0:  # after the model: the classes are those of the whole split
        sub = slice(0, min(s.train_size, len(splits.x_train)))
        splits = replace(splits, x_train=splits.x_train[sub], y_train=splits.y_train[sub])
    qk0 = [p.clone().to(device) for p in qk_weights(model, last_only=True)]
    frozen = freeze_qk(model) if control == "null" else 0
    if control == "null" and checkpoint is not None:  # never resume from a run of the other arm
        checkpoint = f"{checkpoint}.control-null"
    x_train = splits.normalise(splits.x_train)
    probe_n = len(splits.x_test) if s.probe_size <= 0 else min(s.probe_size, len(splits.x_test))
    probe_x = splits.normalise(splits.x_test[:probe_n]).to(device)
    probe_y = splits.y_test[:probe_n].to(device)
    from ...data.images import first_of_each_class

    map_idx = first_of_each_class(splits.y_test, s.map_classes)
    map_x = splits.normalise(splits.x_test[map_idx]).to(device)
    grid = s.image_size // s.patch_size
    raw = splits.x_test[map_idx].float()
    raw = raw / 255.0 if splits.x_test.dtype == torch.uint8 else raw
    patch_pix = torch.nn.functional.avg_pool2d(raw.mean(1, keepdim=True), s.patch_size)[
        :, 0
    ].reshape(len(map_idx), -1)
    wanted = set(s.map_epochs)

    def zetas(m):
        """(ζ, ζ₀, peak, logits) of the probe set at the current weights."""
        att, att0, logits = cls_attention_pair(m, probe_x, qk0)
        z = [float(soft_sparsity(a.double().cpu().numpy()).mean()) for a in (att, att0)]
        return z[0], z[1], float(att.max(dim=-1).values.mean()), logits

    n_train = len(splits.x_train)
    steps = max(1, n_train // s.batch_size)
    # updates after which a within-epoch snapshot is taken (the epoch's end is the last one)
    marks = {round(steps * j / s.zeta_snapshots) for j in range(1, s.zeta_snapshots)} - {0, steps}
    within: list[tuple[float, float, float]] = []

    def after_backward(m, step, loss):
        if step % steps in marks:  # called before update `step`: `step % steps` updates done
            was = m.training
            m.eval()
            within.append(zetas(m)[:3])
            m.train(was)

    def on_row(m, epoch):
        z, z0, peak, logits = zetas(m)
        snaps = [(z, z0, peak)] if epoch == 0 else [*within, (z, z0, peak)]
        within.clear()
        row = {
            "zeta": float(np.mean([v[0] for v in snaps])),
            "zeta_qk0": float(np.mean([v[1] for v in snaps])),
            "peak": float(np.mean([v[2] for v in snaps])),
            "wnorm": combined_qk_norm(m),
            "probe_acc": float((logits.argmax(-1) == probe_y).float().mean()),
        }
        if epoch in wanted:  # kept in the (checkpointed) history, so a resumed run still has it
            row["map"] = cls_attention(m, map_x)[0].cpu().tolist()  # end of the epoch
        return row

    def loss_fn(m, batch):
        logits = m(batch["x"])
        loss = torch.nn.functional.cross_entropy(logits.float(), batch["y"])
        return loss, {"train_acc": (logits.argmax(-1) == batch["y"]).float().mean().detach()}

    cfg = TrainConfig(
        epochs=s.epochs,
        batch_size=s.batch_size,
        lr=s.lr,
        optimizer=s.optimizer,
        momentum=s.momentum,
        weight_decay=0.0,  # weight decay would cap ‖W‖ and mask the effect
        seed=seed,
        augment_pad=s.augment_pad,
        augment_flip=s.augment_flip,
        compile=s.compile,
    )
    history = fit(
        model,
        {"x": x_train, "y": splits.y_train},
        loss_fn,
        cfg,
        device,
        checkpoint=checkpoint,
        metrics_log=metrics_log,
        on_row=on_row,
        param_groups=[p for p in model.parameters() if p.requires_grad],
        after_backward=after_backward if marks else None,
    )
    if control == "null" and checkpoint is not None:
        # the caller drops the checkpoint it named once the outputs are saved; this one is ours
        Path(checkpoint).unlink(missing_ok=True)
    curves = pd.DataFrame(history).reindex(columns=list(VIT_FIG7_COLUMNS))
    probe_peak = {int(e): float(p) for e, p in zip(curves.epoch, curves.peak, strict=True)}
    maps = {r["epoch"]: np.asarray(r["map"]) for r in history if "map" in r}
    acc_at = {int(e): float(a) for e, a in zip(curves.epoch, curves.train_acc, strict=True)}
    rows = []
    for epoch in sorted(maps):
        w = maps[epoch]
        for j, img in enumerate(map_idx):
            for k in range(w.shape[1]):
                rows.append(
                    (
                        epoch,
                        img,
                        int(splits.y_test[img]),
                        k // grid,
                        k % grid,
                        float(w[j, k]),
                        float(patch_pix[j, k]),
                        acc_at[int(epoch)],
                    )
                )
    maps_df = pd.DataFrame(rows, columns=list(VIT_FIG6_COLUMNS))
    common = {
        "dataset": s.dataset,
        "stand_in": splits.stand_in,
        "device": str(device),
        "optimizer": {"weight_decay": 0.0},
        "probe_size": probe_n,
        "train_images": len(splits.x_train),
        "tokens": grid * grid + 1,
        "timm_architecture": timm_architecture(s.hidden, s.layers, s.heads),
        "control": control,
        "frozen_qk_scalars": frozen,
        "seed": int(seed),
        "settings": s.record(),
    }
    return {
        "fig6": (
            maps_df,
            dict(
                common,
                grid=grid,
                map_epochs=sorted(maps),
                columns=VIT_FIG6_COLUMNS,
                probe_peak=probe_peak,
                # the run's final held-out accuracy (Fig 6's sanity check: the model learned)
                final_probe_acc=float(curves.probe_acc.iloc[-1]),
            ),
        ),
        "fig7": (curves, dict(common, columns=VIT_FIG7_COLUMNS)),
    }
