"""Fig 3 (right): vision transformers (:mod:`attnbias.models.vit`) over a λ_attn grid, one AdamW
run per (λ_attn, seed), then the plot-ready table.

λ_attn decays the q, k, v and output-projection matrices, λ_other the MLP and classifier matrices
(:func:`attnbias.models.vit.vit_param_groups`; decoupled θ ← θ − lr·λ·θ).  Each run records the
per-head rank/balance metrics of every layer at the end
(:func:`~attnbias.experiments.lowrank.common.head_rows`) and the test accuracy.  Data: the offline
``digits`` stand-in (quick) or ImageNet-1k from the hub (paper; :mod:`attnbias.data.imagenet`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from ...data.imagenet import HubImageBatches, load_image_dataset
from ...io import gathered_control
from ..settings import ViTShape, sweep
from .common import (
    HEAD_COLUMNS,
    control_lambda,
    decay_sharing,
    head_rows,
    lr_sum,
    rank_means,
    rank_trace,
)

log = logging.getLogger("attnbias.lowrank")

VIT_COLUMNS = {
    "lam_attn": "AdamW weight decay λ_attn on the q, k, v and output-projection matrices",
    "lam_other": "AdamW weight decay on the MLP and classifier matrices",
    "seed": "seed of the initialisation and of the batch order",
    **HEAD_COLUMNS,
    "test_acc": "test accuracy at the end of training (per run)",
    "train_loss": "mean training cross-entropy over the last epoch (per run)",
}


@dataclass(frozen=True, kw_only=True)
class VitSettings(ViTShape):
    """The ``lowrank: vit`` block: data, model and AdamW settings of the Fig 3 ViTs (descriptions
    in ``workflow/schemas/lowrank.schema.yaml``); ``lam_attn``, ``seeds`` and ``solved_acc`` span
    the sweep (a run gets its point ``attn``, ``seed``)."""

    dataset: str
    source: str | None
    batch_size: int
    grad_accum: int
    epochs: int
    lr: float
    betas: list[float]
    eps: float
    schedule: str
    warmup_steps: int
    final_lr_frac: float
    grad_clip: float | None
    mixup: float
    lam_attn: list[float] | None = sweep()
    lam_other: float
    seeds: list[int] | None = sweep()
    solved_acc: float | None = sweep()
    data_seed: int
    test_fraction: float
    eval_limit: int | None
    workers: int
    compile: bool


def train_vit_wd(
    settings: VitSettings | Mapping,
    attn: float,
    seed: int,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
    progress: bool = False,
    control: str = "none",
):
    """Train one ViT with AdamW (λ_attn on attention matrices, λ_other on MLP/classifier matrices)
    and record per-head rank/balance metrics of every layer and the test accuracy.
    Returns ``{"run": (df, meta)}``.  ``control="null"`` (``--config control=null``) trains with
    λ_attn = 0 whatever ``lam_attn`` says (λ_other unchanged; ``lam_attn`` stays the label, the
    meta records ``lam_attn_used``)."""
    import torch
    import torch.nn.functional as F

    from ...models.vit import timm_architecture, vit_param_groups
    from ...train import TrainConfig, fit, resolve_device

    t0 = time.perf_counter()
    s = VitSettings.of(settings)
    lam_attn = attn
    lam_attn_used = control_lambda(lam_attn, control)
    device = resolve_device(accelerator)
    data = load_image_dataset(s.dataset, s.source, s.data_seed, s.test_fraction)
    sched = dict(
        schedule=s.schedule,
        warmup_steps=s.warmup_steps,
        final_lr_frac=s.final_lr_frac,
        grad_clip=s.grad_clip,
        grad_accum=s.grad_accum,
    )
    def on_row(m, epoch):  # the rank trace (docs/papers/lowrank.md#regime-checks)
        return {"ranks": rank_means(m)}

    extra = {
        "betas": tuple(s.betas),
        "eps": s.eps,
        **({"fused": True} if device.type == "cuda" else {}),
    }
    if s.dataset == "digits":
        channels, n_classes = data.x_train.shape[1], int(data.y_train.max()) + 1
        model = s.build_vit(channels, n_classes, seed)
        train = {"x": data.normalise(data.x_train), "y": data.y_train}
        test_x, test_y = data.normalise(data.x_test), data.y_test
        stand_in = data.stand_in.replace("16×16", f"{s.image_size}×{s.image_size}")

        def loss_fn(m, b):
            logits = m(b["x"])
            return F.cross_entropy(logits.float(), b["y"]), {
                "train_acc": (logits.argmax(-1) == b["y"]).float().mean().detach()
            }

        cfg = TrainConfig(
            epochs=s.epochs,
            batch_size=s.batch_size,
            lr=s.lr,
            optimizer="adamw",
            seed=seed,
            compile=s.compile,
            extra=extra,
            **sched,
        )
        history = fit(
            model,
            train,
            loss_fn,
            cfg,
            device,
            checkpoint=checkpoint,
            metrics_log=metrics_log,
            image_key=None,
            param_groups=vit_param_groups(model, lam_attn_used, s.lam_other),
            progress=progress,
            on_row=on_row,
        )
        model.eval()
        with torch.no_grad():
            correct = sum(
                int(
                    (
                        model(test_x[i : i + 512].to(device)).argmax(-1).cpu()
                        == test_y[i : i + 512]
                    ).sum()
                )
                for i in range(0, len(test_x), 512)
            )
        acc, n_test = correct / len(test_y), len(test_y)
        n_train = len(data.y_train)
    else:
        train_ds, test_ds = data
        n_classes = train_ds.features["label"].num_classes
        model = s.build_vit(3, n_classes, seed)
        spe = len(train_ds) // s.batch_size
        batches = HubImageBatches(
            train_ds, s.image_size, s.batch_size, seed, spe, mixup=s.mixup, workers=s.workers
        )

        def loss_fn(m, b):
            logits = m(b["x"]).float()
            mix = b["mix"]
            loss = (
                mix * F.cross_entropy(logits, b["y"], reduction="none")
                + (1 - mix) * F.cross_entropy(logits, b["y2"], reduction="none")
            ).mean()
            return loss, {}

        cfg = TrainConfig(
            epochs=s.epochs,
            batch_size=s.batch_size,
            lr=s.lr,
            optimizer="adamw",
            seed=seed,
            compile=s.compile,
            steps_per_epoch=spe,
            extra=extra,
            **sched,
        )
        history = fit(
            model,
            None,
            loss_fn,
            cfg,
            device,
            checkpoint=checkpoint,
            metrics_log=metrics_log,
            image_key=None,
            param_groups=vit_param_groups(model, lam_attn_used, s.lam_other),
            progress=progress,
            on_row=on_row,
            batch_fn=batches,
        )
        model.eval()
        ev = HubImageBatches(test_ds, s.image_size, s.batch_size, seed, 1, workers=s.workers)
        correct = n_test = 0
        with (
            torch.no_grad(),
            torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"),
        ):
            for x, y in ev.eval_batches(s.eval_limit):
                correct += int(
                    (model(x.to(device)).argmax(-1).cpu() == y).sum()
                )
                n_test += len(y)
        acc = correct / max(n_test, 1)
        stand_in = None
        n_train = None
    df = pd.DataFrame(head_rows(model, int(history[-1]["epoch"]), True))
    for k, v in (("seed", seed), ("lam_other", float(s.lam_other)), ("lam_attn", float(lam_attn))):
        df.insert(0, k, v)
    df = df.drop(columns=["step"])
    df["test_acc"] = acc
    df["train_loss"] = float(history[-1]["train_loss"])
    d_head = s.hidden // s.heads
    meta = {
        "lam_attn": lam_attn,
        "lam_attn_used": lam_attn_used,
        "control": control,
        "lam_other": s.lam_other,
        "seed": seed,
        "test_acc": acc,
        "n_test": n_test,
        "device": str(device),
        "wall_s": time.perf_counter() - t0,
        "dataset": s.dataset,
        "stand_in": stand_in,
        # what the settings imply; the settings themselves are recorded once, below
        "model": {
            "class": "timm.models.VisionTransformer",
            "timm_architecture": timm_architecture(s.hidden, s.layers, s.heads),
            "d_head": d_head,
            "tokens": (s.image_size // s.patch_size) ** 2 + 1,
        },
        "optimizer": {
            "name": "AdamW",
            "decay": {
                "attn": "q, k, v, o weights (blocks.N.attn.qkv, blocks.N.attn.proj)",
                "other": "MLP and classifier weights (blocks.N.mlp.fc1, fc2, head)",
                "none": "biases, LayerNorms, patch/position embeddings, CLS",
            },
        },
        "settings": s.record(),
        # Σ_t η_t: the time the decoupled decay acts for (docs/papers/lowrank.md#regime-checks)
        "lr_sum": lr_sum(cfg, n_train),
        "rank_trace": rank_trace(history, cfg, n_train),
        "history": [{k: v for k, v in h.items() if k != "ranks"} for h in history],
        "columns": dict(
            VIT_COLUMNS,
            **{f"s{i + 1}": f"singular value {i + 1} of the product" for i in range(d_head)},
        ),
    }
    log.info(
        "ViT λ_attn=%g seed=%d: test accuracy %.4f (%.0f s)", lam_attn, seed, acc, meta["wall_s"]
    )
    return {"run": (df, meta)}


def gather_vit(parts: list[str], preset: str, solved_acc: float, control: str = "none"):
    """Concatenate the per-(λ_attn, seed) ViT runs into the plot-ready table of Fig 3 (right);
    ``control`` is checked against the runs' (:func:`attnbias.io.gathered_control`)."""
    from ...io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append(
            {k: meta[k] for k in ("lam_attn", "lam_other", "seed", "test_acc", "device", "wall_s")}
            | {k: meta.get(k) for k in ("lam_attn_used", "control")}
            # the regime checks' inputs (None for a run recorded before them: the checks fail)
            | {k: meta.get(k) for k in ("lr_sum", "rank_trace")}
        )
    df = pd.concat(frames, ignore_index=True).sort_values(
        ["lam_attn", "seed", "product", "layer", "head"], kind="stable"
    )
    first = load_data(parts[0])[1]
    meta = {
        "preset": preset,
        "control": gathered_control(control, runs),
        "solved_acc": solved_acc,
        "runs": runs,
        "dataset": first["dataset"],
        "stand_in": first["stand_in"],
        "model": first["model"],
        "optimizer": first["optimizer"],
        "settings": first["settings"],
        "source": first.get("settings", {}).get("source"),  # hub id or local directory
        "columns": first["columns"],
    }
    return df.reset_index(drop=True), meta



# Under the negative control every λ_attn trains as λ_attn = 0: the workflow trains that run
# once and relabels it (attnbias.table: the sweep's control_shares; .common.decay_sharing).
control_trains, as_control_run = decay_sharing("attn", "lam_attn")
