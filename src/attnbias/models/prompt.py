"""Prompt attention f(X) = vᵀXᵀ softmax(XWp) of Tarzanagh et al. (maxmargin), p-only and
joint (v, p).

Keys are k_t = Wᵀx_t, so the logits are a = Kp with K = XWᵀ.  Token scores are γ_it = Y_i vᵀx_it.
Gradients come from :func:`attnbias.models.attention.selection_logit_grad` (scaled, log-space).
"""

from __future__ import annotations

import numpy as np

from .attention import log_neg_dloss, selection_logit_grad


def keys(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """k_t = Wᵀ x_t for tokens X (..., n, T, d)."""
    return np.einsum("...td,de->...te", X, W)


def token_scores(X: np.ndarray, Y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """γ_it = Y_i vᵀx_it; X (..., n, T, d), Y (..., n), v (..., d) → (..., n, T)."""
    return np.asarray(Y)[..., None] * np.einsum("...ntd,...d->...nt", X, v)


def prompt_forward(K: np.ndarray, gamma: np.ndarray, p: np.ndarray, loss: str = "logistic"):
    """Risk and scaled gradient in p for fixed scores.

    K (..., n, T, d), gamma (..., n, T), p (..., d).

    Returns the dict of :func:`selection_logit_grad` plus ``grad`` (..., d), the scaled gradient
    ∇_p L / exp(log_scale).
    """
    logits = np.einsum("...ntd,...d->...nt", K, p)
    out = selection_logit_grad(logits, gamma, loss)
    out["grad"] = np.einsum("...nt,...ntd->...d", out["G"], K)
    return out


def prompt_grad_fn(K: np.ndarray, gamma: np.ndarray, loss: str = "logistic"):
    """A ``grad_fn`` for :func:`attnbias.optim.run` over the single block ``p``."""

    def grad_fn(params):
        out = prompt_forward(K, gamma, params["p"], loss)
        return {
            "loss": out["loss"],
            "grads": {"p": (out["grad"], out["log_scale"])},
            "s": out["s"],
        }

    return grad_fn


def joint_grad_fn(X: np.ndarray, Y: np.ndarray, W: np.ndarray, loss: str = "logistic"):
    """A ``grad_fn`` for joint training of (v, p) in f(X) = vᵀXᵀ softmax(XWp).

    ∇_v L = (1/n) Σ_i ℓ'(Y_i f_i) Y_i X_iᵀ s_i;  ∇_p L from the current scores γ = Y vᵀx.
    """
    K = keys(X, W)

    def grad_fn(params):
        v, p = params["v"], params["p"]
        gamma = token_scores(X, Y, v)
        out = prompt_forward(K, gamma, p, loss)
        n = X.shape[-3]
        coef = -np.exp(log_neg_dloss(out["z"], loss)) * np.asarray(Y) / n  # ℓ'(z_i) Y_i / n
        attended = np.einsum("...nt,...ntd->...nd", out["s"], X)  # r_i = X_iᵀ s_i
        gv = np.einsum("...n,...nd->...d", coef, attended)
        scale_v = np.zeros(gv.shape[:-1])
        return {
            "loss": out["loss"],
            "grads": {"v": (gv, scale_v), "p": (out["grad"], out["log_scale"])},
            "s": out["s"],
            "z": out["z"],
        }

    return grad_fn
