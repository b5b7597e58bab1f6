"""One-layer softmax attention with a key–query factorisation (Sheen et al. 2024, *nucnorm*).

    f(X_i) = vᵀ X_iᵀ softmax(X_i K Qᵀ z_i),   𝓛 = (1/n) Σ_i exp(−y_i f_i),

with the head v fixed, tokens X_i (L, d), query token z_i (d,) and label y_i = ±1.  The logits
are a_it = x_itᵀ W z_i with W = KQᵀ, and the token scores are γ_it = y_i vᵀx_it.  Every model here
computes its logits, calls :func:`attnbias.models.attention.selection_logit_grad` (exponential
loss; scaled, log-space, cancellation-free ∂𝓛/∂a) and chains that gradient to its weights:

* ``kq``     separate K, Q (d, m):       ∇_K = G_W Q,  ∇_Q = G_Wᵀ K,  G_W = Σ_it G_it x_it z_iᵀ
* ``merged`` W (d, d) trained directly:  ∇_W = G_W
* ``diag``   K = diag ξ_k, Q = diag ξ_q, so β = ξ_k ⊙ ξ_q and a_it = βᵀ(x_it ⊙ z_i):
             ∇_ξk = g ⊙ ξ_q, ∇_ξq = g ⊙ ξ_k with g = ∇_β = diag(G_W)
* ``beta``   β trained directly (the diagonal merged model): ∇_β = g
* ``uw``     the reparameterisation β = u² − w² of Lemma 4.1: ∇_u = 2g ⊙ u, ∇_w = −2g ⊙ w

All blocks of one model share the positive scale exp(log_scale) of the logit gradient, so the
jointly normalised step of :func:`attnbias.optim.fullbatch.run` is exact however saturated the
softmax is.  Array convention: batch axes ``...`` lead (instances, initialisations); data arrays
may omit them and broadcast.
"""

from __future__ import annotations

import numpy as np

from .attention import logsumexp, selection_logit_grad

LOSS = "exponential"


def token_scores(X: np.ndarray, y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """γ_it = y_i vᵀx_it; X (..., n, L, d), y (..., n), v (..., d) → (..., n, L)."""
    return np.asarray(y)[..., None] * np.einsum("...ntd,...d->...nt", X, v)


def logits(X: np.ndarray, z: np.ndarray, W: np.ndarray) -> np.ndarray:
    """a_it = x_itᵀ W z_i for W (..., d, d), X (..., n, L, d), z (..., n, d)."""
    Wz = np.einsum("...de,...ne->...nd", W, z)
    return np.einsum("...ntd,...nd->...nt", X, Wz)


def weight_grad(X: np.ndarray, z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """G_W = Σ_it G_it x_it z_iᵀ (..., d, d) from the logit gradient G (..., n, L)."""
    Gx = np.einsum("...nt,...ntd->...nd", G, X)
    return np.einsum("...nd,...ne->...de", Gx, z)


def diag_features(X: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x_it ⊙ z_i (..., n, L, d): the logit is βᵀ(x_it ⊙ z_i) when W = diag β."""
    return X * np.asarray(z)[..., None, :]


def forward(X: np.ndarray, z: np.ndarray, gamma: np.ndarray, W: np.ndarray) -> dict:
    """Risk, softmax and the scaled weight gradient at W: the dict of ``selection_logit_grad``
    plus ``GW`` (..., d, d) with ∇_W 𝓛 = exp(log_scale) · GW."""
    out = selection_logit_grad(logits(X, z, W), gamma, LOSS)
    out["GW"] = weight_grad(X, z, out["G"])
    return out


def diag_forward(F: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> dict:
    """Diagonal model on features F = x ⊙ z (..., n, L, d): adds ``g`` (..., d), ∇_β 𝓛 up
    to scale."""
    out = selection_logit_grad(np.einsum("...ntd,...d->...nt", F, beta), gamma, LOSS)
    out["g"] = np.einsum("...nt,...ntd->...d", out["G"], F)
    return out


def kq_grad_fn(X, z, gamma):
    """``grad_fn`` over the blocks ``K`` and ``Q`` (..., d, m) for
    :func:`attnbias.optim.fullbatch.run`."""

    def grad_fn(params):
        K, Q = params["K"], params["Q"]
        out = forward(X, z, gamma, K @ np.swapaxes(Q, -1, -2))
        GW, ls = out["GW"], out["log_scale"]
        out["grads"] = {"K": (GW @ Q, ls), "Q": (np.swapaxes(GW, -1, -2) @ K, ls)}
        return out

    return grad_fn


def merged_grad_fn(X, z, gamma):
    """``grad_fn`` over the single block ``W`` (..., d, d)."""

    def grad_fn(params):
        out = forward(X, z, gamma, params["W"])
        out["grads"] = {"W": (out["GW"], out["log_scale"])}
        return out

    return grad_fn


def diag_grad_fn(F, gamma):
    """``grad_fn`` over ``xk`` and ``xq`` (..., d): K = diag ξ_k, Q = diag ξ_q."""

    def grad_fn(params):
        xk, xq = params["xk"], params["xq"]
        out = diag_forward(F, gamma, xk * xq)
        g, ls = out["g"], out["log_scale"]
        out["grads"] = {"xk": (g * xq, ls), "xq": (g * xk, ls)}
        return out

    return grad_fn


def beta_grad_fn(F, gamma):
    """``grad_fn`` over ``beta`` (..., d): the diagonal W = diag β trained directly."""

    def grad_fn(params):
        out = diag_forward(F, gamma, params["beta"])
        out["grads"] = {"beta": (out["g"], out["log_scale"])}
        return out

    return grad_fn


def uw_grad_fn(F, gamma):
    """``grad_fn`` over ``u`` and ``w`` (..., d) with β = u² − w² (Lemma 4.1 reparameterisation)."""

    def grad_fn(params):
        u, w = params["u"], params["w"]
        out = diag_forward(F, gamma, u * u - w * w)
        g, ls = out["g"], out["log_scale"]
        out["grads"] = {"u": (2.0 * g * u, ls), "w": (-2.0 * g * w, ls)}
        return out

    return grad_fn


def log_excess_risk(log_s: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """log(𝓛 − 𝓛*) without cancellation, 𝓛* = (1/n) Σ_i exp(−γ_{i,opt_i}).

    Per input, δ_i = γ_opt − y_i f_i = Σ_{t≠opt} s_it (γ_opt − γ_it) ≥ 0 is a sum of non-negative
    terms (summed in log space), and exp(−y_i f_i) − exp(−γ_opt) = exp(−γ_opt) · expm1(δ_i).
    Returns (...,); −inf when the risk equals its infimum to working precision.
    """
    g_opt = np.max(gamma, axis=-1, keepdims=True)
    gap = g_opt - gamma
    with np.errstate(divide="ignore"):
        terms = np.where(gap > 0, log_s + np.log(np.where(gap > 0, gap, 1.0)), -np.inf)
        log_delta = logsumexp(terms, axis=-1)
        delta = np.exp(log_delta)
        # log expm1(δ): δ + log(−expm1(−δ)) in general, log δ + δ/2 once δ is tiny (or underflows)
        small = log_delta < -30.0
        big = np.where(small, 1.0, delta)
        log_expm1 = np.where(small, log_delta + delta / 2, big + np.log(-np.expm1(-big)))
        per_input = -g_opt[..., 0] + log_expm1
    n = gamma.shape[-2]
    return logsumexp(per_input, axis=-1) - np.log(n)
