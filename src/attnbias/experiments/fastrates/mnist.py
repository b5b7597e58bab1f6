"""Fig 6 (proposal; docs/papers/fastrates.md#fastrates_fig6): the paper's one-layer model
Φ(X) = uᵀXᵀsoftmax(XWx₁) on patch tokens of the digits 0 and 1 (offline scikit-learn digits, or
MNIST from the hub), trained jointly by full-batch GD, NGD and PS in float64, like the synthetic
Fig 3.

The images and their tokens come from :mod:`attnbias.data.digits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...analysis.fastrates import METHODS
from ...data.digits import digit01_images, patch_tokens
from ...io import check_control
from ...models.attention import softmax
from ...models.selfattn import joint_grad_fn
from ...models.selfattn import logits as attn_logits
from ...optim.fullbatch import run
from ..settings import Settings
from .synthetic import LN10, record_grid

FIG6_COLUMNS = {
    "method": (
        "update rule: gd, ngd (normalised by the joint norm of (W, u)) or polyak (PS with L* = 0)"
    ),
    "lr": "step size η of the run (the Polyak multiplier for polyak)",
    "t": "iteration (number of full-batch updates done)",
    "loss": "training loss L(W_t, u_t) (logistic)",
    "log10_loss": "log10 L(W_t, u_t), evaluated in log space (no underflow)",
    "train_acc": "training accuracy, sign(Φ(X)) = y",
    "test_acc": "test accuracy, sign(Φ(X)) = y (a prediction Φ = 0 counts as an error)",
    "norm_W": "‖W_t‖_F",
    "norm_u": "‖u_t‖₂",
    "max_attn": "mean over training sequences of max_τ s_τ (1 = the query attends to one token)",
    "selected": "true for the step size chosen for this method (lowest mean log10 train loss)",
}


def mean_log_loss(d: pd.DataFrame) -> float:
    """Mean of log10 L over the run: the trapezoid area under log10 L(t), divided by T."""
    t, y = d.t.to_numpy(float), d.log10_loss.to_numpy(float)
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(t)) / (t[-1] - t[0]))


@dataclass(frozen=True, kw_only=True)
class MnistSettings(Settings):
    """The ``fastrates: fig6`` block (described in ``workflow/schemas/fastrates.schema.yaml``):
    data, tokens and the full-batch step sizes of Fig 6."""

    dataset: str
    source: str | None
    patch: int
    embed_dim: int
    pos_scale: float
    lr: float | list[float]
    polyak_lr: float
    polyak_cap: float | None
    steps: int
    per_decade: int
    proj_seed: int
    data_seed: int
    test_fraction: float


def compute_fig6(
    settings: MnistSettings | Mapping,
    control: str = "none",
) -> tuple[pd.DataFrame, dict]:
    """Fig 6 (proposal), with the settings ``settings`` (:class:`MnistSettings`): the paper's
    model Φ(X) = uᵀXᵀsoftmax(XWx₁) on patch tokens of the digits 0 and 1, W and u trained jointly
    from 0 by full-batch GD, NGD (joint norm) and PS (L* = 0), float64, with the log-space
    gradients of :func:`attnbias.models.selfattn.joint_grad_fn` and the runner
    :func:`attnbias.optim.fullbatch.run`.

    ``pos_scale`` > 0 adds fixed Gaussian position embeddings N(0, pos_scale²/d) to the patch tokens
    (drawn after E from the same generator): without them the model sees a bag of patches, which
    cannot separate 0s from 1s drawn with 2×2 patches, so the loss does not approach the L* = 0 that
    the Polyak step assumes.  ``polyak_cap`` caps the Polyak step size (its first steps from
    (W, u) = 0, where the gradient is small, are otherwise huge).

    ``lr`` is one step size or a grid, shared by GD and NGD; each of the two runs every value and
    uses the one with the lowest mean log10 training loss (:func:`mean_log_loss`, column
    ``selected``), so that neither is compared at a step size that suits only the other.

    ``control="null"`` (the negative control) removes the adaptive step sizes: the NGD and Polyak
    rows are plain GD at their own step size values (``lr``, ``polyak_lr``), labels kept.
    """
    check_control(control)
    s = MnistSettings.of(settings)
    x_tr, y_tr, x_te, y_te, stand_in = digit01_images(
        s.dataset, s.source, s.data_seed, s.test_fraction
    )
    rng = np.random.default_rng(s.proj_seed)
    E = rng.standard_normal((s.patch * s.patch, s.embed_dim)) / s.patch  # N(0, 1/patch²)
    n_patches = (x_tr.shape[1] // s.patch) * (x_tr.shape[2] // s.patch)
    pos = (
        rng.standard_normal((n_patches, s.embed_dim)) * s.pos_scale / np.sqrt(s.embed_dim)
        if s.pos_scale > 0
        else None
    )
    X, Xte = patch_tokens(x_tr, s.patch, E, pos)[None], patch_tokens(x_te, s.patch, E, pos)[None]
    y, yte = y_tr[None], y_te[None]
    d = X.shape[-1]
    params0 = {"W": np.zeros((1, d, d)), "u": np.zeros((1, d))}

    def observe(params, out):
        W, u = params["W"], params["u"]
        s_te = softmax(attn_logits(Xte, W))
        phi_te = np.sum(s_te * np.matmul(Xte, u[..., None, :, None])[..., 0], axis=-1)
        return {
            "log10_loss": out["log_loss"] / LN10,
            "train_acc": np.mean(out["z"] > 0, axis=-1),
            "test_acc": np.mean(yte * phi_te > 0, axis=-1),
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "norm_u": np.linalg.norm(u, axis=-1),
            "max_attn": np.mean(np.exp(np.max(out["log_s"], axis=-1)), axis=-1),
        }

    grad_fn = joint_grad_fn(X, y)
    grid = sorted(float(v) for v in np.atleast_1d(s.lr))
    frames, stopped, selection = [], {}, {}
    for method in METHODS:
        values = [float(s.polyak_lr)] if method == "polyak" else grid
        runs = []
        for m_lr in values:
            traj = run(
                grad_fn,
                params0,
                s.steps,
                method="gd" if control == "null" else method,
                lr=m_lr,
                normalize="joint",
                record_at=record_grid(s.steps, s.per_decade),
                observe=observe,
                loss_star=0.0,
                polyak_cap=s.polyak_cap,
            )
            cols = {"method": method, "lr": m_lr, "t": traj["t"], "loss": traj["loss"][:, 0]}
            for k in FIG6_COLUMNS:
                if k not in cols and k in traj:
                    cols[k] = traj[k][:, 0]
            runs.append((pd.DataFrame(cols), int(traj["stopped_at"][0])))
        score = [mean_log_loss(frame) for frame, _ in runs]
        best = int(np.nanargmin(np.where(np.isfinite(score), score, np.nan)))
        for i, (frame, _) in enumerate(runs):
            frames.append(frame.assign(selected=i == best).reindex(columns=list(FIG6_COLUMNS)))
        stopped[method] = runs[best][1]
        selection[method] = {
            "grid": values,
            "mean_log10_loss": score,
            "chosen": values[best],
            "at_edge": bool(len(values) > 1 and best in (0, len(values) - 1)),
        }
    meta = {
        "dataset": s.dataset,
        "stand_in": stand_in,
        "n_train": int(X.shape[1]),
        "n_test": int(Xte.shape[1]),
        "T": int(X.shape[2]),
        "d": d,
        "embedding": (
            f"fixed Gaussian E ∈ R^({s.patch * s.patch}×{s.embed_dim}), "
            f"entries N(0, 1/{s.patch * s.patch}), seed {s.proj_seed}"
        ),
        "query": "mean of the patch embeddings, prepended",
        "position_embeddings": (
            f"fixed Gaussian N(0, {s.pos_scale:g}²/{s.embed_dim}) per patch position "
            "(none on the query)"
            if pos is not None
            else "none"
        ),
        "labels": "+1 = digit 1, −1 = digit 0",
        "lr": grid,
        "selection": selection,
        "selection_rule": (
            "GD and NGD each at the step size of the grid with the lowest mean log10 training "
            "loss over the run (the same rule for both; PS has one multiplier)"
        ),
        "normalize": "joint",
        "loss_star": 0.0,
        "W0": "0",
        "u0": "0",
        "stopped_at": stopped,
        "control": control,
        "engine_methods": {m: "gd" if control == "null" else m for m in METHODS},
        "settings": s.record(),
        "columns": dict(FIG6_COLUMNS),
    }
    return pd.concat(frames, ignore_index=True), meta
