"""Fig 7 (proposal; docs/papers/fastrates.md#fastrates_fig7): a randomly initialised ViT-small
trained from scratch (CIFAR-10 in the paper preset, the offline 8×8 digits in the quick preset) with
one optimiser and one grid value per run, through the one training loop
:func:`attnbias.train.fit`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...io import check_control
from ..settings import ViTShape, sweep
from .runs import (
    DL_COLUMNS,
    IMAGE_COLUMNS,
    GradNorms,
    curves,
    drop_checkpoint,
    evaluate,
    optimizer_config,
    run_meta,
)


def _image_splits(
    dataset: str, source: str | None, n_val: int, data_seed: int, n_train: int | None = None
):
    """(train, val, test) image tensors and the normalisation: the offline digits (8×8, stratified
    80/20 split) or CIFAR-10 from the hub; the validation split is held out from train (fixed
    seed), and ``n_train`` (None: all) of the rest are trained on, a fixed-seed subsample with
    every class in its share."""
    import torch

    from ...data.images import CIFAR10_HUB, digits16, load_cifar10

    if dataset == "digits":
        sp = digits16(seed=data_seed, upsample=1)
    elif dataset == "cifar10":
        sp = load_cifar10(source or CIFAR10_HUB)
    else:
        raise ValueError(f"unknown image dataset {dataset!r} (digits | cifar10)")
    n = len(sp.y_train)
    rng = np.random.default_rng(data_seed)
    val_idx = torch.from_numpy(np.sort(rng.choice(n, size=n_val, replace=False)))
    keep = torch.ones(n, dtype=torch.bool)
    keep[val_idx] = False
    if n_train is not None:
        rest = torch.nonzero(keep).flatten().numpy()
        if n_train > len(rest):
            raise ValueError(f"n_train={n_train} is more than the {len(rest)} training images")
        # stratified: each class keeps its share (the rounding remainder to the largest classes)
        y_rest = sp.y_train[rest].numpy()
        classes, counts = np.unique(y_rest, return_counts=True)
        take = np.floor(counts * n_train / len(rest)).astype(int)
        take[np.argsort(-counts, kind="stable")[: n_train - take.sum()]] += 1
        chosen = [rng.choice(rest[y_rest == c], size=k, replace=False)
                  for c, k in zip(classes, take, strict=True)]  # fmt: skip
        keep[:] = False
        keep[torch.from_numpy(np.concatenate(chosen))] = True
    x_tr, y_tr = sp.normalise(sp.x_train[keep]), sp.y_train[keep]
    x_va, y_va = sp.normalise(sp.x_train[val_idx]), sp.y_train[val_idx]
    test = {"x": sp.normalise(sp.x_test), "y": sp.y_test}
    return sp, {"x": x_tr, "y": y_tr}, {"x": x_va, "y": y_va}, test


@dataclass(frozen=True, kw_only=True)
class ImageSettings(ViTShape):
    """The ``fastrates: fig7`` block (described in ``workflow/schemas/fastrates.schema.yaml``):
    data, ViT and schedule of the from-scratch runs; ``optimizers`` and ``seeds`` span the
    sweep (a run gets its point ``opt``, ``lr``, ``seed`` and that optimiser's ``opt_settings``)."""

    dataset: str
    source: str | None
    dropout: float
    batch_size: int
    epochs: int
    augment_pad: int
    augment_flip: bool
    n_val: int
    n_train: int | None
    select_at: int | None
    select_on: str
    data_seed: int
    seeds: list[int] | None = sweep()
    probe_steps: int
    compile: bool
    optimizers: dict | None = sweep()


def train_image(
    settings: ImageSettings | Mapping,
    opt: str,
    lr: float,
    opt_settings: dict,
    figure: str,
    seed: int = 0,
    eval_batch: int = 1000,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
    control: str = "none",
) -> dict:
    """Train a randomly initialised ViT (:func:`attnbias.models.vit.build_vit`) from scratch with
    one optimiser, one grid value and one training ``seed`` (initialisation, shuffling,
    augmentation) (the proposal Fig 7); per epoch: train, test and (at
    ``select_at`` and the end) validation metrics; ``control="null"``: the negative control
    (:func:`.runs.optimizer_config`).  Returns {"csv": (curves, meta)}."""
    check_control(control)
    s = ImageSettings.of(settings)
    optimizer = opt
    import torch

    from ... import train as engine
    from ...models.vit import timm_architecture

    select_at = s.epochs if s.select_at is None else int(s.select_at)
    if not 0 < select_at <= s.epochs:
        raise ValueError("select_at must be an epoch within the run")
    device = engine.resolve_device(accelerator)
    sp, train, val, test = _image_splits(s.dataset, s.source, s.n_val, s.data_seed, s.n_train)
    channels = sp.x_train.shape[1]
    if sp.x_train.shape[-1] != s.image_size:
        width = sp.x_train.shape[-1]
        raise ValueError(
            f"{s.dataset} images are {width} pixels wide, not image_size={s.image_size}"
        )
    classes = int(sp.y_train.max()) + 1
    net = s.build_vit(channels, classes, seed, dropout=s.dropout)
    test = {k: v.to(device) for k, v in test.items()}
    steps_per_epoch = max(1, len(train["y"]) // s.batch_size)

    def logits_fn(m, batch):
        return m(batch["x"])

    def loss_fn(m, batch):
        logits = logits_fn(m, batch).float()
        loss = torch.nn.functional.cross_entropy(logits, batch["y"])
        return loss, {"train_acc": (logits.argmax(-1) == batch["y"]).float().mean().detach()}

    def probe():
        return engine.sgd_probe(
            net, train, loss_fn, s.batch_size, lr, s.probe_steps, seed, device, "x",
            s.augment_pad, s.augment_flip,
        )  # fmt: skip

    setup = optimizer_config(optimizer, lr, opt_settings, probe, control)

    norms = GradNorms()

    def on_row(m, epoch):
        row = norms.row()
        row["test_loss"], row["test_acc"] = evaluate(m, test, logits_fn, device, eval_batch)
        if epoch in (select_at, s.epochs):
            row["val_loss"], row["val_acc"] = evaluate(m, val, logits_fn, device, eval_batch)
            row["_select"] = epoch == select_at
        return row

    cfg = engine.TrainConfig(
        epochs=s.epochs, batch_size=s.batch_size, seed=seed, augment_pad=s.augment_pad,
        augment_flip=s.augment_flip, compile=s.compile, **setup.train_settings(),
    )  # fmt: skip
    history = engine.fit(
        net, train, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log,
        on_row=on_row, image_key="x", after_backward=norms.after_backward,
    )  # fmt: skip
    drop_checkpoint(checkpoint)
    df = curves(history, optimizer, lr, steps_per_epoch)
    meta = run_meta(optimizer, lr, setup, history, select_at, control)
    meta.update(
        {
            "figure": figure,
            "dataset": s.dataset,
            "stand_in": sp.stand_in and "scikit-learn digits 8×8 (10 classes)",
            "sizes": {"train": len(train["y"]), "val": len(val["y"]), "test": len(test["y"])},
            # the test set's classes: its majority share is the "trained" sanity check's baseline
            "data_info": {"class_counts": torch.bincount(test["y"].cpu()).tolist()},
            # what the settings imply; the settings themselves are recorded once
            "model": {
                "tokens": (s.image_size // s.patch_size) ** 2 + 1,
                "timm_architecture": timm_architecture(s.hidden, s.layers, s.heads),
            },
            "parameters": sum(p.numel() for p in net.parameters()),
            "steps_per_epoch": steps_per_epoch,
            "augment": {"pad": s.augment_pad, "flip": s.augment_flip},
            "x_unit": "epochs",
            "seed": seed,
            "settings": s.record(),
            "device": str(device),
            "columns": dict(DL_COLUMNS, **IMAGE_COLUMNS),
        }
    )
    return {"csv": (df, meta)}
