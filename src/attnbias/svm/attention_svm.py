"""ATT-SVM, relaxed ATT-SVM, head SVM and the local-optimality bookkeeping (Tarzanagh et al. 2023).

Notation: keys K (n, T, d), selected indices α (n,), token scores γ (n, T).
"""

from __future__ import annotations

import numpy as np

from .qp import QPResult, min_norm_qp


def selection_constraints(K: np.ndarray, alpha) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (k_{iα_i} − k_it) for t ≠ α_i, with their (i, t) indices."""
    K = np.asarray(K, dtype=np.float64)
    n, T, _ = K.shape
    alpha = np.asarray(alpha, dtype=int)
    rows, ii, tt = [], [], []
    for i in range(n):
        for t in range(T):
            if t != alpha[i]:
                rows.append(K[i, alpha[i]] - K[i, t])
                ii.append(i)
                tt.append(t)
    return np.array(rows), np.array(ii), np.array(tt)


def att_svm(K: np.ndarray, alpha, support=None, strict: bool = True) -> QPResult:
    """p^mm(α) = argmin ‖p‖ s.t. pᵀ(k_{iα_i} − k_it) ≥ 1 for all i, t ≠ α_i.

    ``support``: optional boolean mask over inputs.  Rows of inputs outside the support only
    need selection (≥ 0): this is the relaxed SVM of eq. (10), p^relax.
    """
    A, ii, _ = selection_constraints(K, alpha)
    b = np.ones(len(A))
    if support is not None:
        b = np.where(np.asarray(support, dtype=bool)[ii], 1.0, 0.0)
    return min_norm_qp(A, b, strict=strict)


def head_svm(R: np.ndarray, Y: np.ndarray, strict: bool = True) -> QPResult:
    """v^mm = argmin ‖v‖ s.t. Y_i vᵀ r_i ≥ 1 (hard margin, no intercept)."""
    R = np.asarray(R, dtype=np.float64)
    return min_norm_qp(np.asarray(Y, dtype=np.float64)[:, None] * R, np.ones(len(R)), strict=strict)


def support_inputs(R: np.ndarray, Y: np.ndarray, v: np.ndarray, tol: float = 1e-3) -> np.ndarray:
    """Inputs that are support vectors of the head SVM: Y_i vᵀr_i ≤ 1 + tol."""
    return np.asarray(Y) * (np.asarray(R) @ np.asarray(v)) <= 1.0 + tol


def svm_neighbours(K: np.ndarray, alpha, p: np.ndarray, tol: float = 1e-3) -> np.ndarray:
    """Boolean (n, T): t ∈ T_i iff t ≠ α_i and (k_{iα_i} − k_it)ᵀ p ≤ 1 + tol (active
    constraint)."""
    K = np.asarray(K, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=int)
    sel = K[np.arange(len(alpha)), alpha]  # (n, d)
    margins = (sel[:, None, :] - K) @ np.asarray(p, dtype=np.float64)
    mask = margins <= 1.0 + tol
    mask[np.arange(len(alpha)), alpha] = False
    return mask


def classify_selection(gamma: np.ndarray, alpha, neighbours: np.ndarray) -> dict:
    """Local/global optimality of a selection α given its SVM-neighbour sets.

    Returns {"lmm": α locally optimal (γ_{iα_i} > γ_it for t ∈ T_i), "gmm": LMM and α = opt,
    "gamma_gap": min_i min_{t∈T_i} (γ_{iα_i} − γ_it) (+inf when no neighbour)}.
    """
    gamma = np.asarray(gamma, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=int)
    sel = gamma[np.arange(len(alpha)), alpha]
    gaps = np.where(neighbours, sel[:, None] - gamma, np.inf)
    gap = float(np.min(gaps))
    lmm = bool(gap > 0)
    gmm = lmm and bool(np.all(alpha == np.argmax(gamma, axis=1)))
    return {"lmm": lmm, "gmm": gmm, "gamma_gap": gap}
