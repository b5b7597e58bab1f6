"""Fig 2: associative recall with the 2-layer attention-only transformer of
:mod:`attnbias.models.recall` (torch), one AdamW run per (λ, seed), then the plot-ready table.

Decay λ acts on W_Q, W_K, W_V and P only (decoupled: θ ← θ − lr·λ·θ, the penalty (λ/2)‖θ‖²).  Every
``log_every`` steps the per-head rank/balance metrics of KQ and PV
(:func:`~attnbias.experiments.lowrank.common.head_rows`) are logged with the batch loss.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...io import gathered_control
from ..settings import Settings, sweep
from .common import (
    HEAD_COLUMNS,
    control_lambda,
    decay_sharing,
    head_rows,
)

log = logging.getLogger("attnbias.lowrank")

RECALL_COLUMNS = {
    "lam": "AdamW weight decay λ on W_Q, W_K, W_V, P (decoupled: θ ← θ − lr·λ·θ)",
    "seed": "seed of the initialisation and of the data stream",
    "step": "optimiser step (number of updates done)",
    **HEAD_COLUMNS,
    "train_loss": "cross-entropy of the training batch at this step (at the query position)",
    "accuracy": "final query-position accuracy on fresh evaluation samples (per run)",
}


def _device(accelerator: str):
    import torch

    if accelerator == "cuda" or (accelerator == "auto" and torch.cuda.is_available()):
        return torch.device("cuda")
    return torch.device("cpu")


@dataclass(frozen=True, kw_only=True)
class RecallSettings(Settings):
    """The ``lowrank: fig2`` block: task, model and AdamW settings of the recall runs (descriptions
    in ``workflow/schemas/lowrank.schema.yaml``); ``lambdas``, ``seeds`` and ``solved_acc`` span
    the sweep (a run gets its point ``lam``, ``seed``)."""

    solved_acc: float | None = sweep()
    n_pairs: int
    n_keys: int
    n_values: int
    d_model: int
    n_heads: int
    n_layers: int
    batch: int
    steps: int
    lr: float
    betas: list[float]
    eps: float
    lambdas: list[float] | None = sweep()
    seeds: list[int] | None = sweep()
    log_every: int
    eval_samples: int
    spectra_at: list[int]


def train_recall(
    settings: RecallSettings | Mapping,
    lam: float,
    seed: int,
    accelerator: str = "cpu",
    weights_path: str | None = None,
    checkpoint=None,
    metrics_log=None,
    control: str = "none",
):
    """One associative-recall run with AdamW (decay λ on the attention matrices only), trained by
    the engine (:func:`attnbias.train.fit`) with the online recall stream as its data source.

    Update t uses the fresh batch ``RecallTask.batch(batch, seed, t)``.  Every ``log_every`` steps
    (and at the last) the per-head rank/balance metrics of KQ and PV are logged together with the
    cross-entropy of the batch of that step under the current weights (spectra at ``spectra_at``
    and at the end); the final accuracy is measured on ``eval_samples`` fresh samples.  The engine
    ends an "epoch" every gcd(log_every, steps) updates, which is also the checkpoint interval, so a
    killed run resumes from ``checkpoint`` with the same result.

    ``control="null"`` (the negative control of ``--config control=null``) trains with λ = 0 on
    the attention matrices whatever ``lam`` says; ``lam`` stays the run's label (its column and
    file name) and the meta records ``lam_used``.
    """
    import torch
    import torch.nn.functional as F

    from ...data.recall import EVAL_STREAM, RecallTask
    from ...models.recall import RecallTransformer
    from ...train import TrainConfig, fit

    s = RecallSettings.of(settings)
    lam_used = control_lambda(lam, control)
    dev = _device(accelerator)
    task = RecallTask(s.n_pairs, s.n_keys, s.n_values)
    torch.manual_seed(seed)
    model = RecallTransformer(task.vocab, task.seq_len, s.d_model, s.n_heads, s.n_layers).to(dev)
    spectra = set(int(i) for i in s.spectra_at) | {s.steps}
    chunk = math.gcd(int(s.log_every), int(s.steps))
    t0 = time.perf_counter()

    def batch_fn(step, generator=None):
        x, y = task.batch(s.batch, seed, step)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y)}

    def loss_fn(m, b):
        return F.cross_entropy(m(b["x"], last_only=True), b["y"]), {}

    def on_epoch_end(m, epoch):
        step = epoch * chunk
        if step % s.log_every and step != s.steps:
            return {"step": step}
        with torch.no_grad():
            loss = float(loss_fn(m, {k: v.to(dev) for k, v in batch_fn(step).items()})[0])
        rows = [
            {
                k: (
                    float(v)
                    if isinstance(v, float | np.floating)
                    else int(v)
                    if isinstance(v, np.integer)
                    else v
                )
                for k, v in r.items()
            }
            | {"train_loss": loss}
            for r in head_rows(m, step, step in spectra)
        ]
        log.info(
            "λ=%g seed=%d step %d loss %.4f (%.1f s)",
            lam,
            seed,
            step,
            loss,
            time.perf_counter() - t0,
        )
        return {"step": step, "rows": rows}

    cfg = TrainConfig(
        epochs=s.steps // chunk,
        batch_size=s.batch,
        lr=s.lr,
        optimizer="adamw",
        weight_decay=0.0,
        seed=seed,
        steps_per_epoch=chunk,
        bf16=False,
        ckpt_every=max(1, s.log_every // chunk),
        extra={"betas": tuple(s.betas), "eps": s.eps},
    )
    history = fit(
        model,
        None,
        loss_fn,
        cfg,
        dev,
        checkpoint=checkpoint,
        metrics_log=metrics_log,
        on_epoch_end=on_epoch_end,
        param_groups=model.param_groups(lam_used),
        image_key=None,
        progress=False,
        batch_fn=batch_fn,
    )
    rows = [r for h in history for r in h.get("rows", [])]
    correct = 0
    model.eval()
    with torch.no_grad():
        for start in range(0, s.eval_samples, 1024):
            n = min(1024, s.eval_samples - start)
            x, y = task.batch(n, seed, start // 1024, stream=EVAL_STREAM)
            pred = model(torch.from_numpy(x).to(dev), last_only=True).argmax(-1).cpu().numpy()
            correct += int(np.sum(pred == y))
    acc = correct / s.eval_samples
    if weights_path:
        from pathlib import Path

        Path(weights_path).parent.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, weights_path)
    df = pd.DataFrame(rows)
    df.insert(0, "seed", seed)
    df.insert(0, "lam", float(lam))
    df["accuracy"] = acc
    log.info("λ=%g seed=%d accuracy %.4f", lam, seed, acc)
    meta = {
        "lam": lam,
        "lam_used": lam_used,
        "control": control,
        "seed": seed,
        "accuracy": acc,
        "device": str(dev),
        "wall_s": time.perf_counter() - t0,
        # what the settings imply; the settings themselves are recorded once, below
        "task": {"seq_len": task.seq_len, "vocab": task.vocab},
        "model": {
            "d_head": s.d_model // s.n_heads,
            "class": "attnbias.models.recall.RecallTransformer",
        },
        "optimizer": {"name": "AdamW", "decay_on": "W_Q, W_K, W_V, P"},
        "settings": s.record(),
        "engine": {"loop": "attnbias.train.fit (online batch_fn)", "steps_per_epoch": chunk},
        "columns": dict(
            RECALL_COLUMNS,
            **{
                f"s{i + 1}": f"singular value {i + 1} (at spectra steps and the end; else NaN)"
                for i in range(s.d_model // s.n_heads)
            },
        ),
    }
    return df, meta


def train_recall_job(
    settings: RecallSettings | Mapping,
    lam: float,
    seed: int,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "cpu",
    control: str = "none",
):
    """Workflow entry point (scripts/train.py): one Fig 2 run (:func:`train_recall`) with an
    undeclared resume checkpoint; returns ``{"csv": (df, meta)}``."""
    return {
        "csv": train_recall(
            settings,
            lam,
            seed,
            accelerator=accelerator,
            checkpoint=checkpoint,
            metrics_log=metrics_log,
            control=control,
        )  # fmt: skip
    }


def gather_fig2(
    parts: list[str],
    lr: float,
    steps: int,
    solved_acc: float,
    preset: str,
    control: str = "none",
):
    """Concatenate the per-(λ, seed) recall runs into the plot-ready Fig 2 table; ``control`` must
    be the one every run was trained under (:func:`attnbias.io.gathered_control`)."""
    from ...io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append(
            {k: meta[k] for k in ("lam", "seed", "accuracy", "device", "wall_s")}
            | {k: meta.get(k) for k in ("lam_used", "control")}
        )
    df = pd.concat(frames, ignore_index=True).sort_values(
        ["lam", "seed", "step", "product", "layer", "head"], kind="stable"
    )
    first = load_data(parts[0])[1]
    meta = {
        "preset": preset,
        "control": gathered_control(control, runs),
        "lr": lr,
        "steps": steps,
        "solved_acc": solved_acc,
        "runs": runs,
        "task": first["task"],
        "model": first["model"],
        "optimizer": first["optimizer"],
        "settings": first["settings"],
        "columns": first["columns"],
    }
    return df.reset_index(drop=True), meta



# Under the negative control every λ trains as λ = 0: the workflow trains that run
# once and relabels it (register_sweep's control_shares; .common.decay_sharing).
control_trains, as_control_run = decay_sharing("lam", "lam")
