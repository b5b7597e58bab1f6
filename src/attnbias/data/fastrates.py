"""Synthetic data of Vasudeva, Deora, Thrampoulidis, *Implicit Bias and Fast Convergence Rates for
Self-attention* (docs/papers/fastrates.md#data-models).  The paper states that these data models
exist but not their formulas; the constructions below are project choices.

Every generator returns a :class:`SeqData`: tokens ``X`` (n, T, d) whose first token x_{i,1}
(index 0) is the query, labels ``y`` (n,) ∈ {±1}, the decoder direction ``u`` (d,) that defines the
token scores γ_iτ = y_i uᵀx_iτ, and the optimal tokens ``opt`` (n,) = argmax_τ γ_iτ.

Random draws use ``numpy.random.default_rng(seed)`` in a fixed, documented order so that a seed
always gives the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..svm.attention_svm import head_svm


@dataclass
class SeqData:
    """Sequences X (n, T, d), labels y (n,), decoder u (d,), opt tokens opt (n,)."""

    X: np.ndarray
    y: np.ndarray
    u: np.ndarray
    opt: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def gamma(self) -> np.ndarray:
        """Token scores γ_iτ = y_i uᵀx_iτ (n, T)."""
        return self.y[:, None] * (self.X @ self.u)

    @property
    def score_gap(self) -> float:
        """min_i (γ_{i,opt_i} − max_{τ≠opt_i} γ_iτ): positive iff every opt token is unique."""
        g = self.gamma
        top = g[np.arange(len(g)), self.opt]
        rest = np.where(np.arange(g.shape[1])[None, :] == self.opt[:, None], -np.inf, g)
        return float(np.min(top - rest.max(axis=1)))


def alternating_labels(n: int) -> np.ndarray:
    """y_i = +1 for even i, −1 for odd i."""
    return np.where(np.arange(n) % 2 == 0, 1.0, -1.0)


def _orthonormal_basis(rng: np.random.Generator, d: int) -> np.ndarray:
    """Rows of a random orthonormal basis of ℝ^d (QR of a Gaussian matrix, sign-fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * np.sign(np.diag(r))[None, :]).T


def orth_data(
    n: int = 10,
    T: int = 6,
    d: int = 64,
    sigma: float = 0.0,
    seed: int = 0,
    opt_at_query: bool = True,
) -> SeqData:
    """Example 1, nearly orthogonal tokens with noise σ
    (docs/papers/fastrates.md#nearly-orthogonal-tokens).

    Draw order: basis (d×d Gaussian), opt positions (n integers), non-opt coefficients
    c_iτ ~ U[−1, 0.5] (n×T uniforms; the opt entries are overwritten with 1), noise (n×T×d).
    Token (i, τ) is basis vector i·T + τ; the spare basis vector n·T is kept in
    ``meta["spare"]`` (the antipodal direction of :func:`antipodal_data`).  ``opt_at_query=False``
    draws the opt positions from the non-query tokens only.
    """
    if d < n * T + 1:
        raise ValueError(f"orth_data needs d ≥ nT + 1 = {n * T + 1}, got d = {d}")
    rng = np.random.default_rng(seed)
    basis = _orthonormal_basis(rng, d)
    X = basis[: n * T].reshape(n, T, d).copy()
    y = alternating_labels(n)
    opt0 = rng.integers(0 if opt_at_query else 1, T, size=n)
    c = rng.uniform(-1.0, 0.5, size=(n, T))
    c[np.arange(n), opt0] = 1.0
    u = np.einsum("n,nt,ntd->d", y, c, X)
    X = X + sigma * rng.standard_normal((n, T, d)) / np.sqrt(d)
    data = SeqData(X=X, y=y, u=u, opt=np.zeros(n, dtype=int))
    data.opt = np.argmax(data.gamma, axis=1)
    data.meta = {"model": "orth", "sigma": sigma, "seed": seed, "spare": basis[n * T], "coef": c}
    return data


def antipodal_data(
    n: int = 10, T: int = 6, d: int = 64, seed: int = 0, opt_at_query: bool = True
) -> SeqData:
    """Antipodal opt tokens (docs/papers/fastrates.md#antipodal-opt-tokens): every opt token is ±u*
    for one shared unit vector u*.

    Starts from :func:`orth_data` with σ = 0 (same seed), takes u* = its spare basis vector, sets
    x_{i,opt} = y_i u*, adds y_i c_iτ u* to each non-opt token, reusing the orth data's
    coefficients c_iτ ~ U[−1, 0.5] (no further random draws), and uses u = u*.  Scores:
    γ_opt = 1 and γ_iτ = c_iτ otherwise.  Tokens of different sequences are no longer orthogonal.
    """
    base = orth_data(n, T, d, 0.0, seed, opt_at_query)
    ustar = np.asarray(base.meta["spare"])
    c = np.asarray(base.meta["coef"])
    y = base.y
    X = base.X + (y[:, None] * c)[..., None] * ustar
    X[np.arange(n), base.opt] = y[:, None] * ustar
    data = SeqData(X=X, y=y, u=ustar.copy(), opt=np.zeros(n, dtype=int))
    data.opt = np.argmax(data.gamma, axis=1)
    data.meta = {"model": "antipodal", "seed": seed, "ustar": ustar}
    return data


def gaussian_data(
    n: int = 20, T: int = 5, d: int = 32, sigma: float = 0.3, seed: int = 0, max_redraws: int = 100
) -> SeqData:
    """The Gaussian-like data model of the joint-training theorems
    (docs/papers/fastrates.md#gaussian-like-data-model).

    Signal μ = e₁, labels alternate.  Sequence i has its opt token y_iμ + ξ at a uniformly random
    position and pure-noise tokens ξ elsewhere; ξ ~ N(0, σ²I_d) with coordinate 1 set to 0.  The
    decoder is u_mm, the hard-margin SVM on the opt tokens.  Sequences whose argmax_τ y_i u_mmᵀx_iτ
    is not opt_i get fresh noise and u_mm is recomputed, until every opt token is the argmax.

    Draw order: opt positions (n integers), noise (n×T×d), then the redraws.
    """
    if d < 2:
        raise ValueError("gaussian_data needs d ≥ 2")
    rng = np.random.default_rng(seed)
    y = alternating_labels(n)
    opt = rng.integers(0, T, size=n)

    def noise(shape):
        xi = sigma * rng.standard_normal(shape)
        xi[..., 0] = 0.0
        return xi

    X = noise((n, T, d))
    X[np.arange(n), opt, 0] += y
    redraws = 0
    while True:
        umm = head_svm(X[np.arange(n), opt], y).x
        gamma = y[:, None] * (X @ umm)
        bad = np.flatnonzero(np.argmax(gamma, axis=1) != opt)
        if bad.size == 0:
            break
        if redraws >= max_redraws:
            raise RuntimeError(f"gaussian_data: opt tokens not separable after {redraws} redraws")
        redraws += 1
        X[bad] = noise((bad.size, T, d))
        X[bad, opt[bad], 0] += y[bad]
    data = SeqData(X=X, y=y, u=umm, opt=opt.copy())
    data.meta = {
        "model": "gaussian",
        "sigma": sigma,
        "seed": seed,
        "redraws": redraws,
        "mu": np.eye(d)[0],
    }
    return data


def stack(datas: list[SeqData]) -> dict:
    """Stack per-seed data along a leading batch axis: X (S, n, T, d), y (S, n), u (S, d),
    opt (S, n)."""
    return {
        "X": np.stack([s.X for s in datas]),
        "y": np.stack([s.y for s in datas]),
        "u": np.stack([s.u for s in datas]),
        "opt": np.stack([s.opt for s in datas]),
    }
