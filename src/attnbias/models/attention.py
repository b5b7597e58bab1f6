"""Softmax token-selection attention: the one implementation every model in the package reuses.

All synthetic models of the four papers share the same structure.  For input ``i`` with ``T``
tokens the attention logits ``a_i`` (a linear function of the trained weights) give
``s_i = softmax(a_i)``; the prediction is a convex combination of per-token *scores*
``γ_it`` (label times value read-out), ``z_i = Σ_t s_it γ_it``, and the empirical risk is
``L = (1/n) Σ_i ℓ(z_i)`` for a decreasing loss ``ℓ``.  The gradient with respect to the logits is

    ∂L/∂a_it = (1/n) ℓ'(z_i) s_it (γ_it − z_i).

Computed naively, ``γ_it − z_i`` is a difference of nearly equal numbers once the softmax
saturates (catastrophic cancellation), and ``s_it`` and ``ℓ'`` underflow in float64 after a few
thousand normalised steps.  :func:`selection_logit_grad` therefore evaluates

    γ_it − z_i = Σ_τ s_iτ (γ_it − γ_iτ)

(for the attended token, where the cancellation happens) as a signed sum in log space and
returns the gradient *up to a positive scale*: ``∂L/∂a = exp(log_scale) · G`` with
``max |G| = 1`` per batch element.  Normalised methods use ``G`` directly and never see an
underflow; unnormalised GD multiplies by ``exp(log_scale)``, which underflows to exactly zero only
when the true gradient does.

Array convention: leading batch axes ``...`` (initialisations, random trials), then ``n``
inputs and ``T`` tokens.
"""

from __future__ import annotations

import numpy as np

LOSSES = ("logistic", "exponential", "correlation")


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSSES}")


def loss_value(z: np.ndarray, loss: str) -> np.ndarray:
    """ℓ(z) for the logistic log(1+e^{-z}), exponential e^{-z} or correlation −z loss."""
    _check_loss(loss)
    if loss == "logistic":
        return np.logaddexp(0.0, -z)
    if loss == "exponential":
        return np.exp(-z)
    return -z


def log_neg_dloss(z: np.ndarray, loss: str) -> np.ndarray:
    """log(−ℓ'(z)), evaluated stably (ℓ is decreasing, so −ℓ' > 0)."""
    _check_loss(loss)
    if loss == "logistic":
        return -np.logaddexp(0.0, z)  # −ℓ' = σ(−z)
    if loss == "exponential":
        return -z
    return np.zeros_like(z)


def logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp(x) along ``axis``; all −inf gives −inf without warnings."""
    m = np.max(x, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        out = np.log(np.sum(np.exp(x - m_safe), axis=axis, keepdims=True)) + m_safe
    return np.squeeze(out, axis=axis)


def log_softmax(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max-shifted log-softmax."""
    return a - np.expand_dims(logsumexp(a, axis=axis), axis)


def softmax(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max-shifted softmax."""
    return np.exp(log_softmax(a, axis=axis))


def _log_signed_sum(logpos: np.ndarray, logneg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log|A − B|, sign(A − B)) for A = exp(logpos), B = exp(logneg), without cancellation."""
    hi = np.maximum(logpos, logneg)
    lo = np.minimum(logpos, logneg)
    sign = np.sign(logpos - np.where(np.isneginf(logpos) & np.isneginf(logneg), 0.0, logneg))
    sign = np.where(np.isneginf(hi), 0.0, sign)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        diff = np.where(np.isneginf(lo), 0.0, np.exp(lo - np.where(np.isneginf(hi), 0.0, hi)))
        mag = hi + np.log1p(-np.minimum(diff, 1.0))
    mag = np.where(sign == 0.0, -np.inf, mag)
    return mag, sign


def score_gaps(log_s: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log|γ_it − z_i| and its sign, where z_i = Σ_τ s_iτ γ_iτ, without cancellation.

    Only the attended token o = argmax_t s_it suffers cancellation (z_i → γ_io as the softmax
    saturates), so its gap e_io = Σ_τ s_iτ (γ_io − γ_iτ) is summed in log space as a signed sum
    of positive and negative terms.  For t ≠ o, e_it = (γ_it − γ_io) + e_io, a sum whose first
    term is O(1) away from zero in the saturated regime.  Cost O(T) per input.
    """
    o = np.argmax(log_s, axis=-1)[..., None]
    g_o = np.take_along_axis(gamma, o, axis=-1)
    d = g_o - gamma  # γ_o − γ_t
    with np.errstate(divide="ignore"):
        w = log_s + np.log(np.abs(d))
    logpos = logsumexp(np.where(d > 0, w, -np.inf), axis=-1)
    logneg = logsumexp(np.where(d < 0, w, -np.inf), axis=-1)
    log_eo, sign_eo = _log_signed_sum(logpos, logneg)
    with np.errstate(under="ignore"):
        e_o = sign_eo * np.exp(log_eo)
    e = e_o[..., None] - d
    with np.errstate(divide="ignore"):
        log_e = np.log(np.abs(e))
    sign_e = np.sign(e)
    is_o = np.zeros(log_s.shape, dtype=bool)
    np.put_along_axis(is_o, o, True, axis=-1)
    log_e = np.where(is_o, log_eo[..., None], log_e)
    sign_e = np.where(is_o, sign_eo[..., None], sign_e)
    return log_e, sign_e


def selection_logit_grad(logits: np.ndarray, gamma: np.ndarray, loss: str = "logistic"):
    """Risk, softmax and the scaled, cancellation-free gradient with respect to the logits.

    Parameters
    ----------
    logits, gamma : arrays of shape (..., n, T)
        Attention logits a_it and token scores γ_it (label already folded in).
    loss : "logistic" | "exponential" | "correlation"

    Returns
    -------
    dict with
        ``loss`` (...,): (1/n) Σ_i ℓ(z_i);
        ``s`` (..., n, T): softmax probabilities;
        ``log_s`` (..., n, T): their logarithms;
        ``z`` (..., n): Σ_t s_it γ_it;
        ``G`` (..., n, T) and ``log_scale`` (...,): ∂L/∂a = exp(log_scale) · G, max|G| = 1
        (G = 0 and log_scale = −inf where the gradient is exactly zero).
    """
    _check_loss(loss)
    logits = np.asarray(logits, dtype=np.float64)
    gamma = np.broadcast_to(np.asarray(gamma, dtype=np.float64), logits.shape)
    n = logits.shape[-2]
    log_s = log_softmax(logits)
    s = np.exp(log_s)
    z = np.sum(s * gamma, axis=-1)
    log_e, sign_e = score_gaps(log_s, gamma)
    # ℓ' < 0, so sign(∂L/∂a_it) = −sign(γ_it − z_i)
    log_mag = log_neg_dloss(z, loss)[..., None] + log_s + log_e - np.log(n)
    log_scale = np.max(log_mag, axis=(-2, -1))
    safe = np.where(np.isfinite(log_scale), log_scale, 0.0)
    with np.errstate(under="ignore"):
        G = -sign_e * np.exp(log_mag - safe[..., None, None])
    G = np.where(np.isfinite(log_scale)[..., None, None], G, 0.0)
    return {
        "loss": np.mean(loss_value(z, loss), axis=-1),
        "s": s,
        "log_s": log_s,
        "z": z,
        "G": G,
        "log_scale": log_scale,
    }
