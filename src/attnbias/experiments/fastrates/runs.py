"""What every deep-learning training run of the fastrates figures shares (Figs 1 and 4: BERT
fine-tuning, :mod:`.finetune`; the proposal Fig 7: ViT-small, :mod:`.image`): SGD vs SNGD vs SPS vs
AdamW, one run per (figure, optimiser, grid value), each its own Snakemake job returning a tidy
curve table that :func:`.gather.gather_dl` later selects from.

Here: the curve columns, how an optimiser and its grid value become the engine's
:class:`attnbias.train.TrainConfig` settings (:func:`optimizer_config`, with SNGD's
step-size matching, docs/papers/fastrates.md#step-size-matching), evaluation in batches, and the
run's curve table and metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...analysis.fastrates import DL_OPTIMIZERS
from ...io import check_control

DL_COLUMNS = {
    "optimizer": "sgd | sngd | sps | adamw",
    "lr": (
        "grid value of the run: the learning rate (SGD, AdamW), η (SNGD; the SGD learning rate "
        "it is matched to when match_sgd) or the SGD learning rate SPS's Polyak step is matched to "
        "at the start (its c = median ℓ_B/(lr ‖g_B‖²) over the SGD probe)"
    ),
    "step": "optimisation steps done (0 = before training)",
    "train_loss": (
        "mean minibatch cross-entropy over the steps since the previous row (NaN at step 0)"
    ),
    "train_acc": "mean minibatch accuracy over the steps since the previous row (NaN at step 0)",
    "grad_norm": (
        "mean global minibatch gradient norm ‖g_B‖ (every trainable parameter, after backward and "
        "before any clipping) over the steps since the previous row (NaN at step 0)"
    ),
    "test_loss": "cross-entropy on the test set (NaN where not evaluated)",
    "test_acc": "accuracy on the test set (NaN where not evaluated)",
    "val_loss": (
        "cross-entropy on the validation split, which selects the learning rate "
        "(NaN where not evaluated)"
    ),
    "val_acc": "accuracy on the validation split (NaN where not evaluated)",
}
IMAGE_COLUMNS = {"epoch": "epochs done (0 = before training)"}


@dataclass
class OptimizerSetup:
    """One run's optimiser as engine settings: the optimiser of the engine's static table
    (``train.engine.OPTIMIZERS``), its effective learning rate and keyword arguments (``extra``),
    and the engine-level refinements (AdamW's global-norm clipping and linear decay to 0 are
    ``grad_clip`` and ``schedule="linear"`` of :class:`attnbias.train.TrainConfig`).  ``info``
    records the SNGD step-size matching (empty otherwise)."""

    name: str
    lr: float
    extra: dict = field(default_factory=dict)
    momentum: float = 0.0
    weight_decay: float = 0.0
    grad_clip: float | None = None
    schedule: str = "constant"
    info: dict = field(default_factory=dict)

    def train_settings(self) -> dict:
        """The keyword arguments of :class:`attnbias.train.TrainConfig` that this setup fixes."""
        return {
            "optimizer": self.name,
            "lr": self.lr,
            "extra": dict(self.extra),
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "grad_clip": self.grad_clip,
            "schedule": self.schedule,
        }


def optimizer_config(
    optimizer: str,
    lr: float,
    opt_settings: dict,
    probe: Callable[[], dict[str, list[float]]] | None = None,
    control: str = "none",
) -> OptimizerSetup:
    """The engine settings of one run of ``optimizer`` at grid value ``lr`` with the figure's
    ``opt_settings`` (config keys: ``momentum`` for SGD; ``match_sgd``, ``eps`` for SNGD; ``cap``
    for SPS; ``eps``, ``weight_decay``, ``clip``, ``schedule`` for AdamW).

    ``probe()`` returns the gradient norms ‖g_B‖ and minibatch losses ℓ_B of a short SGD run with
    learning rate lr (:func:`attnbias.train.sgd_probe`); only SNGD with ``match_sgd`` and SPS call
    it (docs/papers/fastrates.md#step-size-matching):

    - SNGD with ``match_sgd``: η = lr × median ‖g_B‖, so SNGD's steps have the length SGD's
      typically have at the start;
    - SPS: c = median ℓ_B/(lr ‖g_B‖²), so the Polyak step ℓ_B/(c ‖g_B‖²) is SGD's rate lr at the
      start and adapts from there.  SPS's grid of SGD rates is thereby a grid of c a factor 3
      apart, the knob its comparison searches; the cap γ_b (``cap``) is a fixed safeguard well
      above the rates, never searched (docs/papers/fastrates.md#sps).

    ``control="null"`` (the negative control) removes the paper's mechanism, the adaptive step
    size: the SNGD and SPS slots run plain SGD with learning rate ``lr`` (the workflow gives them
    SGD's grid then, attnbias.table.fastrates) and the slot's ``momentum`` key (default 0,
    SGD's setting in every preset); SGD and AdamW are unchanged."""
    s = dict(opt_settings)
    if check_control(control) == "null" and optimizer in ("sngd", "sps"):
        return OptimizerSetup(
            "sgd", lr, momentum=float(s.get("momentum", 0.0)),
            info={"control": f"null: plain SGD at the {optimizer} grid value"},
        )  # fmt: skip
    if optimizer == "sgd":
        return OptimizerSetup("sgd", lr, momentum=float(s.get("momentum", 0.0)))
    if optimizer == "sngd":
        eta, info = lr, {}
        if s.get("match_sgd", False):
            norms = probe()["grad_norms"]
            med = float(np.median(norms))
            eta = lr * med
            info = {
                "matched_to_sgd_lr": lr,
                "probe_grad_norms": norms,
                "probe_median_grad_norm": med,
            }
        return OptimizerSetup("sngd", eta, {"eps": float(s.get("eps", 1e-8))}, info=info)
    if optimizer == "sps":
        seen = probe()
        # the median Polyak ratio ℓ_B/‖g_B‖² of SGD's first steps (ℓ_B > 0, ‖g_B‖ > 0 there)
        ratio = float(np.median(np.divide(seen["losses"], np.square(seen["grad_norms"]))))
        c = ratio / lr
        info = {
            "matched_to_sgd_lr": lr,
            "probe_grad_norms": seen["grad_norms"],
            "probe_losses": seen["losses"],
            "probe_median_polyak_ratio": ratio,
            "c": c,
        }
        return OptimizerSetup("sps", float(s["cap"]), {"c": c, "f_star": 0.0}, info=info)
    if optimizer == "adamw":
        return OptimizerSetup(
            "adamw",
            lr,
            {"eps": float(s.get("eps", 1e-8))},
            weight_decay=float(s.get("weight_decay", 0.0)),
            grad_clip=s.get("clip"),
            schedule="linear" if s.get("schedule", "constant") == "linear" else "constant",
        )
    raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {DL_OPTIMIZERS}")


def control_trains(run: dict) -> dict:
    """The uncontrolled run that a run under the negative control trains, bit for bit
    (:func:`optimizer_config`): an SNGD or SPS slot is the SGD run at its grid value, with
    the slot's ``momentum`` (default 0); SGD and AdamW are themselves.  Where SGD's grid holds
    the value and its settings are those, the workflow trains the run once, in the default run's
    folder, and relabels it (:func:`as_control_run`) instead of training it again.

    Parameters
    ----------
    run : dict
        A training run's keyword settings: ``settings`` (the figure's block), ``figure``,
        ``opt``, ``lr``, ``opt_settings`` and ``control`` when not ``"none"``.

    Returns
    -------
    dict
        The settings of the uncontrolled run it trains (without ``control``).
    """
    out = {k: v for k, v in run.items() if k != "control"}
    if check_control(run.get("control", "none")) == "null" and run["opt"] in ("sngd", "sps"):
        out["opt"] = "sgd"
        out["opt_settings"] = {"momentum": float(run["opt_settings"].get("momentum", 0.0))}
    return out


def as_control_run(tables: dict, run: dict) -> dict:
    """A finished run's tables (those of ``control_trains(run)``) as the run ``run`` writes them
    itself under the control: its optimiser slot in the ``optimizer`` column and entry, its
    ``control``, and the step-size entry :func:`optimizer_config` gives it; the engine settings
    it records are checked to be the ones it trains with.  Training the run instead gives the
    same tables but for ``train_seconds``.  ``tables``: ``{name: (df, meta)}`` (not modified).
    """
    setup = optimizer_config(run["opt"], run["lr"], run["opt_settings"], None, run["control"])
    out = {}
    for name, (df, meta) in tables.items():
        engine = {
            "engine_optimizer": setup.name, "effective_lr": setup.lr,
            "optimizer_extra": dict(setup.extra), "momentum": setup.momentum,
            "weight_decay": setup.weight_decay, "grad_clip": setup.grad_clip,
            "schedule": setup.schedule,
        }  # fmt: skip
        trained = {k: meta.get(k) for k in engine}
        if trained != engine:
            raise ValueError(f"the run to relabel trained with {trained}, not {engine} of {run}")
        df = df.copy()
        df["optimizer"] = run["opt"]
        out[name] = (
            df,
            dict(meta, optimizer=run["opt"], control=run["control"],
                 step_size_matching=setup.info or None),
        )  # fmt: skip
    return out


class GradNorms:
    """The global minibatch gradient norm ‖g_B‖ of every step, averaged per logged row: pass
    :meth:`after_backward` to :func:`attnbias.train.fit` and merge :meth:`row` into each row.  The
    regime check ``sgd_grad_fell`` reads from it whether SGD's gradients shrank, the phase in which
    normalised and Polyak steps gain over SGD (docs/papers/fastrates.md#regime-checks).  The norm
    is accumulated on the device (no host synchronisation per step)."""

    def __init__(self):
        self._sum, self._n = None, 0

    def after_backward(self, model, step, loss) -> None:
        from ...optim.stochastic import global_grad_norm

        norm = global_grad_norm(p for p in model.parameters() if p.grad is not None).detach()
        self._sum = norm if self._sum is None else self._sum + norm
        self._n += 1

    def row(self) -> dict:
        """``{"grad_norm": mean ‖g_B‖ since the last call}`` (empty before any step)."""
        if not self._n:
            return {}
        out = {"grad_norm": float(self._sum) / self._n}
        self._sum, self._n = None, 0
        return out


def evaluate(model, data: dict, logits_fn, device, batch_size: int = 256) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` on ``data`` (tensors with ``y``), in batches."""
    import torch

    n = len(data["y"])
    loss_sum, correct = 0.0, 0.0
    use_bf16 = device.type == "cuda"
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
        for i in range(0, n, batch_size):
            batch = {k: v[i : i + batch_size].to(device) for k, v in data.items()}
            logits = logits_fn(model, batch).float()
            ce = torch.nn.functional.cross_entropy(logits, batch["y"], reduction="sum")
            loss_sum += float(ce)
            correct += float((logits.argmax(-1) == batch["y"]).sum())
    return loss_sum / n, correct / n


def drop_checkpoint(checkpoint) -> None:
    """Delete a finished run's resume checkpoint (hundreds of MB for BERT): a killed run resumes
    from it, but a rerun of a finished job (e.g. after a code change) must train afresh, not return
    the stored history of the old code."""
    if checkpoint:
        Path(checkpoint).unlink(missing_ok=True)


def curves(
    history: list[dict], optimizer: str, lr: float, steps_per_epoch: int | None = None
) -> pd.DataFrame:
    """The run's tidy curve table (:data:`DL_COLUMNS`) from the engine's history: of a run
    counted in steps (fine-tuning), or of one counted in epochs (images: ``steps_per_epoch``
    updates each; the table then has ``epoch`` too)."""
    image = steps_per_epoch is not None
    rows = []
    for r in history:
        step = r["epoch"] * steps_per_epoch if image else r["step"]
        row = {"optimizer": optimizer, "lr": lr, "step": step}
        if image:
            row["epoch"] = r["epoch"]
        for k in ("train_loss", "train_acc", "grad_norm", "test_loss", "test_acc", "val_loss",
                  "val_acc"):  # fmt: skip
            row[k] = float(r.get(k, np.nan))
        rows.append(row)
    cols = dict(DL_COLUMNS, **IMAGE_COLUMNS) if image else dict(DL_COLUMNS)
    return pd.DataFrame(rows).reindex(columns=list(cols))


def run_meta(
    optimizer: str,
    lr: float,
    setup: OptimizerSetup,
    history: list[dict],
    select_at: int,
    control: str = "none",
) -> dict:
    """The metadata every run records: optimiser, grid value, the engine settings it ran with,
    the step-size matching, the control, and the validation metrics at the selection row
    (``_select``)."""
    sel = [r for r in history if r.get("_select")]
    return {
        "optimizer": optimizer,
        "control": control,
        "grid_value": lr,
        "engine_optimizer": setup.name,
        "effective_lr": setup.lr,
        "optimizer_extra": dict(setup.extra),
        "momentum": setup.momentum,
        "weight_decay": setup.weight_decay,
        "grad_clip": setup.grad_clip,
        "schedule": setup.schedule,
        "step_size_matching": setup.info or None,
        "select_at": select_at,
        "val_loss_at_select": float(sel[-1]["val_loss"]) if sel else None,
        "val_acc_at_select": float(sel[-1]["val_acc"]) if sel else None,
        "train_seconds": float(sum(r.get("seconds", 0.0) for r in history)),
        # SNGD / SPS: how often the rule's own step was the one taken (optim.stochastic own_step)
        "own_step": history[-1].get("own_step") if history else None,
    }
