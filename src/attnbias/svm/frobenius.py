"""Frobenius-norm max-margin problems over a matrix W, and W_mm of self-attention
(docs/papers/fastrates.md#model-and-conventions).

    W_mm = argmin ‖W‖_F  s.t.  (x_{i,opt_i} − x_iτ)ᵀ W x_i1 ≥ 1   for all i and τ ≠ opt_i.

Each constraint is linear in W through the rank-one feature M_j = Δ_j q_jᵀ (Δ the token difference,
q the query): ⟨M_j, W⟩_F = Δ_jᵀ W q_j.  With rows vec(M_j) this is an instance of
:func:`attnbias.svm.qp.min_norm_qp`; with d = 64 the primal has d² = 4,096 variables but only
n(T − 1) constraints, so ``method="auto"`` solves the dual (Gram G_jk = (Δ_jᵀΔ_k)(q_jᵀq_k)) and
recovers W_mm = Σ_j λ_j M_j.  The transpose convention matches the model
(:func:`attnbias.models.selfattn.logits`: a_iτ = x_iτᵀ W x_i1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .qp import QPResult, min_norm_qp


@dataclass
class FrobeniusSVM:
    W: np.ndarray  # (d1, d2) solution
    margins: np.ndarray  # ⟨M_j, W⟩ for every constraint row
    qp: QPResult  # the underlying min-norm QP (x = vec(W), dual multipliers)

    @property
    def norm(self) -> float:
        return float(np.linalg.norm(self.W))

    # the common fields of every min-norm SVM result (see attnbias.svm.nuclear.NormSVM)
    @property
    def x(self) -> np.ndarray:
        return self.W

    @property
    def status(self) -> str:
        return self.qp.status

    @property
    def dual(self) -> np.ndarray:
        return self.qp.dual

    def active(self, tol: float = 1e-6) -> np.ndarray:
        """Constraints that hold with equality (support): margin ≤ 1 + tol."""
        return self.margins <= 1.0 + tol


def frobenius_svm(M: np.ndarray, b=1.0, method: str = "auto", strict: bool = True) -> FrobeniusSVM:
    """min ‖W‖_F s.t. ⟨M_j, W⟩_F ≥ b_j, for feature matrices M (m, d1, d2).

    ``method``: "auto" (dual when m < d1·d2), "primal" or "dual", as in :func:`min_norm_qp`.
    """
    M = np.asarray(M, dtype=np.float64)
    m = M.shape[0]
    A = M.reshape(m, -1)
    b = np.broadcast_to(np.asarray(1.0 if b is None else b, dtype=np.float64), (m,))
    res = min_norm_qp(A, b, method=method, strict=strict)
    W = res.x.reshape(M.shape[1:])
    return FrobeniusSVM(W=W, margins=A @ res.x, qp=res)


def selection_features(X: np.ndarray, opt) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M_j = (x_{i,opt_i} − x_iτ) x_i1ᵀ for every i and τ ≠ opt_i, with their (i, τ) indices.

    ``X`` (n, T, d) with the query at index 0; returns M (n(T−1), d, d), i (m,), τ (m,).
    """
    X = np.asarray(X, dtype=np.float64)
    n, T, _ = X.shape
    opt = np.asarray(opt, dtype=int)
    ii, tt = np.nonzero(np.arange(T)[None, :] != opt[:, None])
    delta = X[ii, opt[ii]] - X[ii, tt]
    q = X[ii, 0]
    return np.einsum("jd,je->jde", delta, q), ii, tt


def w_mm(X: np.ndarray, opt, method: str = "auto", strict: bool = True) -> FrobeniusSVM:
    """W_mm for sequences X (n, T, d) (query x_i1 = X[i, 0]) and optimal tokens ``opt`` (n,)."""
    M, _, _ = selection_features(X, opt)
    return frobenius_svm(M, 1.0, method=method, strict=strict)
