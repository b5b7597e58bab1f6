"""p4: Lemma 5.1, alignment of K and Q with the data is preserved along the flow."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...metrics.core import cosine
from ...metrics.rank import singular_values
from ...models import kq
from ...optim.fullbatch import run
from ...svm.nuclear import margin
from . import problems
from .measures import objective_ratio, record_points


def _random_orthogonal(rng, d):
    Qm, Rm = np.linalg.qr(rng.standard_normal((d, d)))
    return Qm * np.sign(np.diag(Rm))[None, :]


def offdiag_mass(A: np.ndarray, R: np.ndarray) -> np.ndarray:
    """‖offdiag(A R)‖_F / ‖A‖_F for A (..., d, d): 0 iff A = diag(σ) Rᵀ (R orthogonal)."""
    B = A @ R
    off = B - np.einsum("...ii->...i", B)[..., :, None] * np.eye(B.shape[-1])
    return np.linalg.norm(off, axis=(-2, -1)) / np.linalg.norm(A, axis=(-2, -1))


def gram_difference(K: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """KᵀK − QᵀQ, conserved by gradient flow on (K, Q)."""
    return np.swapaxes(K, -1, -2) @ K - np.swapaxes(Q, -1, -2) @ Q


P4_COLUMNS = {
    "init": "aligned (K(0) = diag(σ_K)Rᵀ, Q(0) = diag(σ_Q)Rᵀ) or control (i.i.d. Gaussian)",
    "t": "iteration",
    "offdiag_K": "‖offdiag(K(t)R)‖_F/‖K(t)‖_F",
    "offdiag_Q": "‖offdiag(Q(t)R)‖_F/‖Q(t)‖_F",
    "corr_svm": "corr(K(t)Q(t)ᵀ, W*) with W* = W*_nuc = W*_F on this data",
    "ratio_nuc": "R_nuc of K(t)Q(t)ᵀ (inf while γ ≤ 0)",
}


def trajectories_p4(
    instance,
    svm,
    n: int,
    L: int,
    d: int,
    seed: int,
    sigma_low: float,
    sigma_high: float,
    control_scale: float,
    init_seed: int,
    lr: float,
    steps: int,
    n_records: int,
):
    """p4: Lemma 5.1, alignment of K, Q with the data is preserved along the flow.

    Both initialisations are trained together (batch of two).  ``instance``, ``svm``: the stages
    of :mod:`.problems` (the aligned instance; its SVM solutions and closed form).
    """
    inst = problems.instance_of(instance)
    M = inst.features()
    (Wn_x, Wn_norm, _), (Wf_x, _, _) = (problems.solution(svm, "", k) for k in ("nuc", "frob"))
    W_cf = np.asarray(svm["closed_form"])
    rng = np.random.default_rng(init_seed)
    R = _random_orthogonal(rng, d)
    sK = rng.uniform(sigma_low, sigma_high, d)
    sQ = rng.uniform(sigma_low, sigma_high, d)
    K0 = np.stack([np.diag(sK) @ R.T, control_scale * rng.standard_normal((d, d))])
    Q0 = np.stack([np.diag(sQ) @ R.T, control_scale * rng.standard_normal((d, d))])
    rec = record_points(steps, n_records)
    tr = run(
        kq.kq_grad_fn(inst.X, inst.z, inst.gamma), {"K": K0, "Q": Q0}, steps, lr=lr, record_at=rec
    )
    K, Q = tr["params"]["K"], tr["params"]["Q"]  # (R, 2, d, d)
    W = K @ np.swapaxes(Q, -1, -2)
    frames = []
    for j, name in enumerate(("aligned", "control")):
        Wj = W[:, j]
        s = singular_values(Wj)
        frames.append(
            pd.DataFrame(
                {
                    "init": name,
                    "t": rec,
                    "offdiag_K": offdiag_mass(K[:, j], R),
                    "offdiag_Q": offdiag_mass(Q[:, j], R),
                    "corr_svm": cosine(Wj.reshape(len(rec), -1), Wn_x.reshape(1, -1), axis=-1),
                    "ratio_nuc": objective_ratio(s.sum(-1), margin(M, Wj), Wn_norm),
                }
            )
        )
    meta = {
        "columns": P4_COLUMNS,
        "n": n,
        "L": L,
        "d": d,
        "seed": seed,
        "lr": lr,
        "steps": steps,
        "svm_nuc_vs_frob_maxabs": float(np.max(np.abs(Wn_x - Wf_x))),
        "svm_nuc_vs_closed_form_maxabs": float(np.max(np.abs(Wn_x - W_cf))),
        "closed_form_diag": np.diag(W_cf).tolist(),
        "conserved_drift": [
            float(
                np.linalg.norm(
                    gram_difference(K[-1, j], Q[-1, j]) - gram_difference(K[0, j], Q[0, j])
                )
            )
            for j in range(2)
        ],
    }
    return pd.concat(frames, ignore_index=True), meta


