"""Synthetic figures of Vasudeva, Deora, Thrampoulidis, *Implicit Bias and Fast Convergence Rates
for Self-attention* (docs/papers/fastrates.md): Figs 2, 3, 5 and the proposals Figs 8–10 (Table 1 is
fitted from the Fig 2 data by :func:`attnbias.analysis.fastrates.rate_table`).

Each group runs in three stages (rules `instance`, `svm`, `compute`): its data and W_mm come from
:mod:`.problems`, and ``trajectories_<group>(instance, svm, **settings)`` runs the dynamics;
:func:`attnbias.table.stages.run_stages` runs the three in one call.  It returns ``(DataFrame,
meta)``.
The DataFrame is tidy (one row per method,
data seed, initialisation, step size and recorded iteration t; t = 0 is the initial point) and
``meta["columns"]`` documents it.  All runs are float64, batched over seeds (and initialisations)
through :func:`attnbias.optim.fullbatch.run`, with the gradients of
:mod:`attnbias.models.selfattn`.  Quantities that decay to 0 are stored as log10 values computed in
log space (the excess loss, 1 − s̄_opt, 1 − corr), so nothing underflows in the data files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.fastrates import METHODS
from ...data import fastrates as fd
from ...models.attention import loss_value
from ...models.prompt import token_scores
from ...models.selfattn import joint_grad_fn, log_one_minus_sopt, wonly_grad_fn
from ...optim.fullbatch import run
from . import problems
from .problems import wmm_batch

LN10 = np.log(10.0)
# iterations that the claims read; always recorded when within the run
KEY_TIMES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)

COLUMNS = {
    "method": "update rule: gd (constant step), ngd (normalised GD) or polyak (Polyak step, PS)",
    "seed": "data seed",
    "init": "initialisation index within the data seed (0 for W0 = 0)",
    "lr": "step size η (the Polyak multiplier for polyak)",
    "t": "iteration (number of updates done)",
    "loss": "training loss L(W_t) (plain; for joint training the infimum is 0)",
    "log10_excess": (
        "log10(L − L*): excess loss over L* = (1/n) Σ ℓ(γ_opt) (fixed u) or log10 L (joint)"
    ),
    "sopt": "s̄_opt = (1/n) Σ_i s_{i,opt_i}",
    "log10_one_minus_sopt": "log10(1 − s̄_opt), from Σ_{τ≠opt} s_iτ in log space",
    "norm_W": "‖W_t‖_F",
    "log10_one_minus_corr": (
        "log10(1 − corr(W_t, W_mm)), 1 − corr = ½‖W_t/‖W_t‖ − W_mm/‖W_mm‖‖² (1 at W = 0)"
    ),
}
JOINT_COLUMNS = {
    "norm_u": "‖u_t‖₂",
    "log10_one_minus_corr_u": "log10(1 − corr(u_t, u_mm))",
}


def record_grid(steps: int, per_decade: int = 40) -> list[int]:
    """Recorded iterations: 0..10, a log-spaced grid, the claim times of KEY_TIMES, and
    ``steps``."""
    grid = np.unique(
        np.round(
            np.logspace(
                0,
                np.log10(max(steps, 1)),
                per_decade * max(1, int(np.ceil(np.log10(max(steps, 2))))),
            )
        ).astype(int)
    )
    pts = (
        set(range(min(steps, 10) + 1))
        | {int(g) for g in grid}
        | {t for t in KEY_TIMES if t <= steps}
        | {steps}
    )
    return sorted(t for t in pts if 0 <= t <= steps)


def log10_one_minus_corr(A: np.ndarray, B: np.ndarray, axes: tuple) -> np.ndarray:
    """log10(1 − corr(A, B)) over ``axes`` as ½‖Â − B̂‖² (no 1 − cos cancellation); 0 where A = 0."""
    na = np.sqrt(np.sum(A * A, axis=axes, keepdims=True))
    nb = np.sqrt(np.sum(B * B, axis=axes, keepdims=True))
    v = 0.5 * np.sum((A / np.where(na > 0, na, 1.0) - B / nb) ** 2, axis=axes)
    v = np.where(np.squeeze(na, axis=axes) > 0, v, 1.0)
    with np.errstate(divide="ignore"):
        return np.log10(v)


def frame_rows(method, lr, traj, seeds, inits, extra_cols=()) -> pd.DataFrame:
    """Flatten a run (R records × B batch) into rows."""
    R = len(traj["t"])
    Bn = len(seeds)
    cols = {
        "method": method,
        "seed": np.tile(seeds, R),
        "init": np.tile(inits, R),
        "lr": lr,
        "t": np.repeat(traj["t"], Bn),
        "loss": traj["loss"].reshape(-1),
    }
    for k in (
        "log10_excess",
        "sopt",
        "log10_one_minus_sopt",
        "norm_W",
        "log10_one_minus_corr",
        *extra_cols,
    ):
        cols[k] = traj[k].reshape(-1)
    return pd.DataFrame(cols)


def _wonly_observer(opt: np.ndarray, Wmm: np.ndarray):
    def observe(params, out):
        W = params["W"]
        l1ms = log_one_minus_sopt(out["log_s"], opt)
        return {
            "log10_excess": out["log_excess"] / LN10,
            "sopt": -np.expm1(l1ms),
            "log10_one_minus_sopt": l1ms / LN10,
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "log10_one_minus_corr": log10_one_minus_corr(W, Wmm, (-2, -1)),
        }

    return observe


def wonly_runs(
    datas: list[fd.SeqData], runs: list[tuple[str, float, int]], inits_per_seed: int = 1,
    init_scale: float = 0.0, polyak_cap: float | None = None, per_decade: int = 40,
    wmm: tuple[np.ndarray, dict] | None = None,
) -> tuple[pd.DataFrame, dict]:  # fmt: skip
    """W-only training (decoder fixed to the data's u) for each (method, lr, steps) in ``runs``.

    Batch = data seeds × initialisations.  W0 = 0, or i.i.d. N(0, init_scale²) entries drawn from
    ``default_rng([seed, 1000 + init])`` when ``init_scale > 0``.  ``wmm``: W_mm per seed and its
    summary (:func:`~.problems.wmm_batch`), solved here if not given.
    """
    S, n_init = len(datas), inits_per_seed
    st = fd.stack(datas)
    rep = lambda a: np.repeat(a, n_init, axis=0)  # noqa: E731
    X, y, u, opt = rep(st["X"]), rep(st["y"]), rep(st["u"]), rep(st["opt"])
    gamma = token_scores(X, y, u)
    Wmm_s, info = wmm_batch(datas) if wmm is None else wmm
    Wmm = rep(Wmm_s)
    d = X.shape[-1]
    seeds = np.repeat([dd.meta["seed"] for dd in datas], n_init)
    inits = np.tile(np.arange(n_init), S)
    W0 = np.zeros((S * n_init, d, d))
    if init_scale > 0:
        for b in range(S * n_init):
            W0[b] = init_scale * np.random.default_rng(
                [int(seeds[b]), 1000 + int(inits[b])]
            ).standard_normal((d, d))
    grad_fn = wonly_grad_fn(X, gamma)
    observe = _wonly_observer(opt, Wmm)
    frames, stopped = [], {}
    for method, lr, steps in runs:
        traj = run(
            grad_fn,
            {"W": W0},
            steps,
            method=method,
            lr=lr,
            record_at=record_grid(steps, per_decade),
            observe=observe,
            polyak_cap=polyak_cap,
        )
        frames.append(frame_rows(method, lr, traj, seeds, inits))
        stopped[f"{method}@{lr:g}"] = traj["stopped_at"]
    g_opt = np.take_along_axis(token_scores(st["X"], st["y"], st["u"]), st["opt"][..., None], -1)[
        ..., 0
    ]
    loss_star = np.mean(loss_value(g_opt, "logistic"), axis=-1)  # L* = (1/n) Σ ℓ(γ_opt)
    meta = dict(info)
    meta.update(
        {
            "seeds": [dd.meta["seed"] for dd in datas],
            "loss_star": loss_star,
            "score_gap": [dd.score_gap for dd in datas],
            "opt": st["opt"],
            "stopped_at": stopped,
            "inits_per_seed": n_init,
            "init_scale": init_scale,
            "polyak_cap": polyak_cap,
            "decoder": "fixed (u of the data model)",
            "W0": "0" if init_scale == 0 else f"N(0, {init_scale:g}²) entries",
            "columns": dict(COLUMNS),
        }
    )
    return pd.concat(frames, ignore_index=True), meta


def _wonly_figure(
    instance, svm, model, n, T, d, sigma, lr, polyak_lr, steps_gd, steps_fast, polyak_cap,
    per_decade, opt_at_query=True,
):  # fmt: skip
    datas = problems.datas(instance)
    runs = [("gd", lr, steps_gd), ("ngd", lr, steps_fast), ("polyak", polyak_lr, steps_fast)]
    df, meta = wonly_runs(
        datas, runs, polyak_cap=polyak_cap, per_decade=per_decade, wmm=problems.wmm(svm)
    )
    meta.update(
        {
            "data_model": model,
            "n": n,
            "T": T,
            "d": d,
            "sigma": sigma,
            "lr": lr,
            "polyak_lr": polyak_lr,
            "steps_gd": steps_gd,
            "steps_fast": steps_fast,
            "opt_at_query": opt_at_query,
        }
    )
    return df, meta


def trajectories_fig2(
    instance, svm, n: int, T: int, d: int, sigma: float, seeds: list[int], lr: float,
    steps_gd: int, steps_fast: int, polyak_lr: float = 1.0, polyak_cap: float | None = None,
    per_decade: int = 40,
):  # fmt: skip
    """Fig 2 (and the Table 1 fits): W-only GD / NGD / PS on Example 1 (nearly orthogonal
    tokens)."""
    return _wonly_figure(
        instance, svm, "orth", n, T, d, sigma, lr, polyak_lr, steps_gd, steps_fast, polyak_cap,
        per_decade,
    )  # fmt: skip


def trajectories_fig5(
    instance, svm, n: int, T: int, d: int, seeds: list[int], lr: float, steps_gd: int,
    steps_fast: int, polyak_lr: float = 1.0, opt_at_query: bool = False,
    polyak_cap: float | None = None, per_decade: int = 40,
):  # fmt: skip
    """Fig 5: W-only GD / NGD / PS with antipodal opt tokens.

    ``opt_at_query=False`` (project choice): no opt token sits at the query position.  When it
    does, that query is ±u* itself, shared across sequences, and from W₀ = 0 NGD can converge to a
    selection other than opt (L − L* then stays bounded away from 0 and the Polyak step diverges).
    """
    return _wonly_figure(
        instance, svm, "antipodal", n, T, d, 0.0, lr, polyak_lr, steps_gd, steps_fast,
        polyak_cap, per_decade, opt_at_query,
    )  # fmt: skip


# Fig 8 (proposal): Fig 2's dynamics on noisy tokens (σ > 0), drawn by ``instance_fig2``
trajectories_fig8 = trajectories_fig2


def trajectories_fig9(
    instance, svm, n: int, T: int, d: int, sigma: float, seeds: list[int], inits: int,
    init_scale: float, lr: float, steps_gd: int, steps_fast: int, polyak_lr: float = 1.0,
    polyak_cap: float | None = None, per_decade: int = 20,
):  # fmt: skip
    """Fig 9 (proposal): Fig 2 from random initialisations W0 ~ N(0, init_scale²) (global
    convergence)."""
    datas = problems.datas(instance)
    runs = [("gd", lr, steps_gd), ("ngd", lr, steps_fast), ("polyak", polyak_lr, steps_fast)]
    df, meta = wonly_runs(
        datas,
        runs,
        inits_per_seed=inits,
        init_scale=init_scale,
        polyak_cap=polyak_cap,
        per_decade=per_decade,
        wmm=problems.wmm(svm),
    )
    meta.update(
        {
            "data_model": "orth",
            "n": n,
            "T": T,
            "d": d,
            "sigma": sigma,
            "lr": lr,
            "polyak_lr": polyak_lr,
            "steps_gd": steps_gd,
            "steps_fast": steps_fast,
        }
    )
    return df, meta


def trajectories_fig10(
    instance, svm, n: int, T: int, d: int, sigma: float, seeds: list[int], lrs: list[float],
    steps: int, per_decade: int = 10,
):  # fmt: skip
    """Fig 10 (proposal): step-size sweep of GD and NGD on the Fig 2 data (last iterate vs η)."""
    datas = problems.datas(instance)
    runs = [(m, float(lr), steps) for lr in lrs for m in ("gd", "ngd")]
    df, meta = wonly_runs(datas, runs, per_decade=per_decade, wmm=problems.wmm(svm))
    meta.update(
        {"data_model": "orth", "n": n, "T": T, "d": d, "sigma": sigma, "lrs": lrs, "steps": steps}
    )
    return df, meta


def trajectories_fig3(
    instance, svm, n: int, T: int, d: int, sigma: float, seeds: list[int], lr: float,
    steps: int, polyak_lr: float = 1.0, normalize: str = "joint",
    polyak_cap: float | None = None, per_decade: int = 40,
):  # fmt: skip
    """Fig 3: joint training of (W, u) on the Gaussian-like data model, from W0 = 0, u0 = 0.

    NGD normalises by the norm of the concatenated gradient (``normalize="joint"``) or each block
    separately (``"block"``); PS uses L* = 0.  W_mm uses the data's opt tokens, u_mm is the data's
    decoder (the hard-margin SVM on the opt tokens).
    """
    datas = problems.datas(instance)
    st = fd.stack(datas)
    X, y, opt, umm = st["X"], st["y"], st["opt"], st["u"]
    Wmm, info = problems.wmm(svm)
    S = len(seeds)
    params0 = {"W": np.zeros((S, d, d)), "u": np.zeros((S, d))}

    def observe(params, out):
        W, u = params["W"], params["u"]
        l1ms = log_one_minus_sopt(out["log_s"], opt)
        return {
            "log10_excess": out["log_loss"] / LN10,
            "sopt": -np.expm1(l1ms),
            "log10_one_minus_sopt": l1ms / LN10,
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "log10_one_minus_corr": log10_one_minus_corr(W, Wmm, (-2, -1)),
            "norm_u": np.linalg.norm(u, axis=-1),
            "log10_one_minus_corr_u": log10_one_minus_corr(u, umm, (-1,)),
        }

    frames, stopped = [], {}
    grad_fn = joint_grad_fn(X, y)
    for method in METHODS:
        m_lr = polyak_lr if method == "polyak" else lr
        traj = run(
            grad_fn,
            params0,
            steps,
            method=method,
            lr=m_lr,
            normalize=normalize,
            record_at=record_grid(steps, per_decade),
            observe=observe,
            loss_star=0.0,
            polyak_cap=polyak_cap,
        )
        frames.append(
            frame_rows(
                method,
                m_lr,
                traj,
                np.asarray(seeds),
                np.zeros(S, dtype=int),
                extra_cols=tuple(JOINT_COLUMNS),
            )
        )
        stopped[method] = traj["stopped_at"]
    meta = dict(info)
    meta.update(
        {
            "data_model": "gaussian",
            "n": n,
            "T": T,
            "d": d,
            "sigma": sigma,
            "seeds": seeds,
            "lr": lr,
            "polyak_lr": polyak_lr,
            "steps": steps,
            "normalize": normalize,
            "polyak_cap": polyak_cap,
            "loss_star": 0.0,
            "umm_norm": np.linalg.norm(umm, axis=-1),
            "redraws": [dd.meta["redraws"] for dd in datas],
            "score_gap_umm": [dd.score_gap for dd in datas],
            "stopped_at": stopped,
            "W0": "0",
            "u0": "0",
            "columns": dict(COLUMNS, **JOINT_COLUMNS),
        }
    )
    return pd.concat(frames, ignore_index=True), meta


