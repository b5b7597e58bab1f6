"""The over-parameterisation study of Tarzanagh et al. 2023, Figs 9–10 (random trials).

Two stages (rules `instance`, `compute`): ``instance_fig9`` draws the trials of every d, and
``trajectories_fig9`` runs NGD on all trials of a d together, then solves one ATT-SVM per
saturated trial for the selection GD reached.  There is no SVM stage: those QPs depend on where
GD goes.  :func:`attnbias.table.stages.run_stages` runs both in one call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import synthetic as syn
from ...metrics import cosine
from ...models import prompt_grad_fn, softmax, token_scores
from ...optim import run
from ...svm import InfeasibleSVM, att_svm, classify_selection, svm_neighbours


def instance_fig9(d_grid, trials, n, T, seed_base, init_scale):
    """Figs 9–10: the random trials of every d (seed = seed_base + d; the initial points are drawn
    with the data, from the same generator)."""
    arrays = {}
    for d in d_grid:
        X, Y, v, p0 = syn.random_sphere_trials(d, trials, n, T, seed_base + d, init_scale)
        arrays.update({f"X_d{d}": X, f"Y_d{d}": Y, f"v_d{d}": v, f"p0_d{d}": p0})
    doc = {
        "X_d*": "tokens (trials, n, T, d) of dimension d",
        "Y_d*": "labels (trials, n)",
        "v_d*": "heads (trials, d)",
        "p0_d*": "initial points (trials, d)",
    }
    return arrays, doc


def fig9_trials(
    d: int,
    trials: int,
    n: int,
    T: int,
    steps: int,
    lr: float,
    seed: int,
    sat_tol: float,
    nb_tol: float,
    init_scale: float,
) -> pd.DataFrame:
    """One d of the over-parameterisation study: all trials advanced together, then one QP per
    trial."""
    X, Y, v, p0 = syn.random_sphere_trials(d, trials, n, T, seed, init_scale)
    return _fig9_run(d, X, Y, v, p0, steps, lr, sat_tol, nb_tol)


def _fig9_run(d, X, Y, v, p0, steps, lr, sat_tol, nb_tol) -> pd.DataFrame:
    trials = len(X)
    gamma = token_scores(X, Y, v)  # W = I: keys are the tokens
    traj = run(prompt_grad_fn(X, gamma), {"p": p0}, steps, method="ngd", lr=lr, record_at=[steps])
    p = traj["params"]["p"][-1]
    s = softmax(np.einsum("bntd,bd->bnt", X, p))
    alpha = np.argmax(s, axis=-1)
    sat_prob = np.take_along_axis(s, alpha[..., None], axis=-1)[..., 0].mean(axis=-1)
    saturated = sat_prob >= 1.0 - sat_tol
    rows = []
    opt = np.argmax(gamma, axis=-1)
    for b in range(trials):
        row = {
            "d": d,
            "trial": b,
            "sat_prob": sat_prob[b],
            "saturated": bool(saturated[b]),
            "qp_failed": False,
            "lmm": False,
            "gmm": False,
            "selects_opt": bool(np.all(alpha[b] == opt[b])),
            "corr": np.nan,
            "gamma_gap": np.nan,
            "norm": float(np.linalg.norm(p[b])),
        }
        if saturated[b]:
            try:
                pmm = att_svm(X[b], alpha[b]).x
            except InfeasibleSVM:
                row["qp_failed"] = True
            else:
                nb = svm_neighbours(X[b], alpha[b], pmm, tol=nb_tol)
                cls = classify_selection(gamma[b], alpha[b], nb)
                row.update(lmm=cls["lmm"], gmm=cls["gmm"], gamma_gap=cls["gamma_gap"])
                row["corr"] = float(cosine(p[b], pmm))
        rows.append(row)
    return pd.DataFrame(rows)


FIG9_COLUMNS = {
    "d": "dimension",
    "trial": "trial index within d",
    "sat_prob": "(1/n) Σ_i s_{iα_i} at the last iterate, α_i = argmax_t s_it",
    "saturated": "sat_prob ≥ 1 − sat_tol",
    "qp_failed": "ATT-SVM(α) could not be solved (counted as not LMM)",
    "lmm": "saturated and α is locally optimal (an LMM)",
    "gmm": "LMM and α_i = opt_i for every i",
    "selects_opt": "α_i = opt_i for every i",
    "corr": "cos(p, p^mm(α)) for saturated, solved trials",
    "gamma_gap": "min_i min_{t∈T_i} (γ_{iα_i} − γ_it) over SVM-neighbours",
    "norm": "‖p‖ at the last iterate",
}


def trajectories_fig9(
    instance,
    svm,
    d_grid: list[int],
    trials: int,
    n: int,
    T: int,
    steps: int,
    lr: float,
    seed_base: int,
    sat_tol: float,
    nb_tol: float,
    init_scale: float,
):
    """Figs 9–10: the random-trial study over the d grid (seed = seed_base + d; no SVM stage:
    the QPs are those of the selections GD reaches)."""
    frames = [
        _fig9_run(
            d,
            *(np.asarray(instance[f"{k}_d{d}"]) for k in ("X", "Y", "v", "p0")),
            steps,
            lr,
            sat_tol,
            nb_tol,
        )  # fmt: skip
        for d in d_grid
    ]
    meta = {
        "d_grid": d_grid,
        "trials": trials,
        "n": n,
        "T": T,
        "steps": steps,
        "lr": lr,
        "seed_base": seed_base,
        "sat_tol": sat_tol,
        "nb_tol": nb_tol,
        "init_scale": init_scale,
        "columns": FIG9_COLUMNS,
    }
    return pd.concat(frames, ignore_index=True), meta


