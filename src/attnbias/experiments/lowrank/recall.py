"""Fig 2: associative recall with the 2-layer attention-only transformer of
:mod:`attnbias.models.recall` (torch), one AdamW run per (λ, seed), then the plot-ready table.
Any number of runs train side by side in one model (:func:`train_recall_runs`); one run
(:func:`train_recall`) is the case of one.

Decay λ acts on W_Q, W_K, W_V and P only (decoupled: θ ← θ − lr·λ·θ, the penalty (λ/2)‖θ‖²).  Every
``log_every`` steps the per-head rank/balance metrics of KQ and PV
(:func:`~attnbias.experiments.lowrank.common.head_rows`) are logged with the batch loss.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ...io import gathered_control
from ..settings import Settings, sweep
from .common import (
    HEAD_COLUMNS,
    control_lambda,
    decay_sharing,
)
from .recall_loop import correct_answers, stacked_runs, train_runs

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


class Paused(RuntimeError):
    """Training stopped early by its ``stop`` (a time budget) after saving its checkpoint: the
    same call with the same checkpoint resumes from ``step``."""

    def __init__(self, step: int, checkpoint):
        super().__init__(f"paused at step {step}; checkpoint {checkpoint}")
        self.step, self.checkpoint = step, checkpoint


def train_recall_runs(
    settings: RecallSettings | Mapping,
    points: Sequence[tuple[float, int]],
    accelerator: str = "cpu",
    weights_paths: Sequence[str] | None = None,
    checkpoint=None,
    metrics_log=None,
    control: str = "none",
    checkpoint_every: int | None = None,
    stop: Callable[[int], bool] | None = None,
    data_workers: int = 0,
    metric_workers: int = 0,
) -> list[tuple[pd.DataFrame, dict]]:
    """Associative-recall runs with AdamW (decay λ on the attention matrices only), one per
    ``(lam, seed)`` of ``points``, trained side by side in one model
    (:class:`~attnbias.models.recall.RecallRuns`) by the engine (:func:`attnbias.train.fit`).

    Run r is the one run of its point: its weights start as ``RecallTransformer`` initialised
    under ``torch.manual_seed(seed)``, update t uses its fresh batch ``RecallTask.batch(batch,
    seed, t)``, the loss is the sum of the runs' mean cross-entropies (so each run gets its own
    gradient), and :class:`~attnbias.train.runs.RunsAdamW` keeps its own Adam moments and its
    decoupled decay λ_r.  Every ``log_every`` steps (and at the last) the per-head rank/balance
    metrics of each run's KQ and PV are logged with that run's cross-entropy on the batch of that
    step under the current weights (spectra at ``spectra_at`` and at the end); each run's final
    accuracy is measured on ``eval_samples`` fresh samples.  Returns one ``(df, meta)`` per point,
    in order: the same table as :func:`train_recall` of that point (which is this function for
    one point), up to float32 rounding.

    The engine counts the run in steps: a row every ``log_every`` updates and after the last;
    the checkpoint (every run together) is saved where the engine's
    :class:`~attnbias.train.RowPlan` says, at the first row end at or after each multiple of
    ``checkpoint_every`` updates (default ``log_every``) and after the last, so a killed job
    resumes from ``checkpoint`` with the same result.  ``stop(step)``, asked after each row, may
    end training early (a time budget): the checkpoint is saved and :class:`Paused` raised.
    ``data_workers``: threads drawing the next updates' batches while the GPU trains;
    ``metric_workers``: threads computing the runs' metrics while training goes on, finished
    before each checkpoint (both change no number).

    ``control="null"`` (the negative control of ``--config control=null``) trains with λ = 0 on
    the attention matrices whatever ``lam`` says; ``lam`` stays the run's label (its column and
    file name) and the meta records ``lam_used``.
    """
    s = RecallSettings.of(settings)
    points = [(float(lam), int(seed)) for lam, seed in points]
    if not points:
        raise ValueError("train_recall_runs needs at least one (lam, seed)")
    lams_used = [control_lambda(lam, control) for lam, _ in points]
    seeds = [seed for _, seed in points]
    dev = _device(accelerator)
    task, model = stacked_runs(s, seeds, dev)
    t0 = time.perf_counter()
    history = train_runs(
        model, task, s, seeds, lams_used, dev,
        checkpoint=checkpoint, metrics_log=metrics_log, stop=stop, t0=t0,
        checkpoint_every=int(checkpoint_every or s.log_every),
        data_workers=data_workers, metric_workers=metric_workers,
    )  # fmt: skip
    if history[-1]["step"] < s.steps:
        raise Paused(history[-1]["step"], checkpoint)
    correct = correct_answers(model, task, s, seeds, dev)
    wall = time.perf_counter() - t0
    _save_weights(model, weights_paths)
    info = {"control": control, "device": str(dev), "wall_s": wall, "runs_together": len(points)}
    return [
        _run_table(history, r, lam, seed, lam_used, int(correct[r]) / s.eval_samples, s, task, info)
        for r, ((lam, seed), lam_used) in enumerate(zip(points, lams_used, strict=True))
    ]


def _save_weights(model, paths: Sequence[str] | None) -> None:
    """Run r's weights, as the one run's ``RecallTransformer`` state dict, to ``paths[r]``."""
    if not paths:
        return
    from pathlib import Path

    import torch

    for r, path in enumerate(paths):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(model.run_state_dict(r), path)


def _run_table(
    history, r: int, lam, seed, lam_used, acc: float, s: RecallSettings, task, info: dict
) -> tuple[pd.DataFrame, dict]:
    """Run r's ``(df, meta)``: its rows of the history, its accuracy and what it ran."""
    df = pd.DataFrame([row for h in history for row in (h["rows"][r] if "rows" in h else [])])
    df.insert(0, "seed", seed)
    df.insert(0, "lam", float(lam))
    df["accuracy"] = acc
    log.info("λ=%g seed=%d accuracy %.4f", lam, seed, acc)
    spectrum = {
        f"s{i + 1}": f"singular value {i + 1} (at spectra steps and the end; else NaN)"
        for i in range(s.d_model // s.n_heads)
    }
    meta = {
        "lam": lam,
        "lam_used": lam_used,
        "control": info["control"],
        "seed": seed,
        "accuracy": acc,
        "device": info["device"],
        "wall_s": info["wall_s"],
        # what the settings imply; the settings themselves are recorded once, below
        "task": {"seq_len": task.seq_len, "vocab": task.vocab},
        "model": {
            "d_head": s.d_model // s.n_heads,
            "class": "attnbias.models.recall.RecallTransformer",
        },
        "optimizer": {"name": "AdamW", "decay_on": "W_Q, W_K, W_V, P"},
        "settings": s.record(),
        "engine": {
            "loop": "attnbias.train.fit (online batch_fn)",
            "eval_every": int(s.log_every),
            # runs trained side by side in one model (attnbias.models.recall.RecallRuns);
            # wall_s is theirs together
            "runs_together": info["runs_together"],
        },
        "columns": dict(RECALL_COLUMNS, **spectrum),
    }
    return df, meta


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
    """One associative-recall run with AdamW (decay λ on the attention matrices only):
    :func:`train_recall_runs` of the one point ``(lam, seed)``, returning its ``(df, meta)``.

    Update t uses the fresh batch ``RecallTask.batch(batch, seed, t)``.  Every ``log_every`` steps
    (and at the last) the per-head rank/balance metrics of KQ and PV are logged together with the
    cross-entropy of the batch of that step under the current weights (spectra at ``spectra_at``
    and at the end); the final accuracy is measured on ``eval_samples`` fresh samples.  The engine
    counts the run in steps, a row (and a checkpoint) every ``log_every`` updates, so a killed run
    resumes from ``checkpoint`` with the same result.

    ``control="null"`` (the negative control of ``--config control=null``) trains with λ = 0 on
    the attention matrices whatever ``lam`` says; ``lam`` stays the run's label (its column and
    file name) and the meta records ``lam_used``.
    """
    return train_recall_runs(
        settings,
        [(lam, seed)],
        accelerator=accelerator,
        weights_paths=[weights_path] if weights_path else None,
        checkpoint=checkpoint,
        metrics_log=metrics_log,
        control=control,
    )[0]


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
# once and relabels it (attnbias.table: the sweep's control_shares; .common.decay_sharing).
control_trains, as_control_run = decay_sharing("lam", "lam")
