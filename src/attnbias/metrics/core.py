"""Alignment, soft-sparsity and trend statistics."""

from __future__ import annotations

import numpy as np


def cosine(a, b, axis=None) -> np.ndarray:
    """cos(a, b) = ⟨a, b⟩ / (‖a‖‖b‖), flattening (axis=None) or along ``axis``; 0 for a zero vector.

    For matrices with axis=None this is the Frobenius correlation ⟨A, B⟩ / (‖A‖_F ‖B‖_F).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if axis is None:
        a, b = a.reshape(-1), b.reshape(-1)
        axis = -1
    a, b = np.broadcast_arrays(a, b)
    num = np.sum(a * b, axis=axis)
    den = np.linalg.norm(a, axis=axis) * np.linalg.norm(b, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def soft_sparsity(s, axis: int = -1) -> np.ndarray:
    """ζ(s) = ‖s‖₁ / ‖s‖₂² of the renormalised probability vector (1 = one-hot, T = uniform).

    ζ is not scale-invariant, so ``s`` is renormalised to sum to one first.
    """
    s = np.asarray(s, dtype=np.float64)
    s = s / np.sum(s, axis=axis, keepdims=True)
    return 1.0 / np.sum(s * s, axis=axis)


def spearman(x, y) -> float:
    """Spearman rank correlation (NaN-safe: returns 0 for a constant sequence)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    from scipy import stats  # here, not at the top: scipy.stats takes ≈ 0.4 s to import

    return float(stats.spearmanr(x, y).statistic)
