"""Single-head self-attention with a linear decoder, Φ(X) = uᵀXᵀ softmax(XWx₁)
(fastrates; docs/papers/fastrates.md#model-and-conventions).

Tokens X (..., n, T, d) with the query x_i1 = X[..., i, 0, :]; key-query matrix W (..., d, d);
decoder u (..., d).  Transpose convention (fixed for the model *and* W_mm, see
:mod:`attnbias.svm.frobenius`): the logits are

    a_iτ = x_iτᵀ W x_i1,   so   ∂a_iτ/∂W = x_iτ x_i1ᵀ,

and the prediction is Φ_i = Σ_τ s_iτ uᵀx_iτ with s_i = softmax(a_i).  With token scores
γ_iτ = y_i uᵀx_iτ, y_iΦ_i = z_i = Σ_τ s_iτ γ_iτ, which is exactly the selection model of
:mod:`attnbias.models.attention`: this module only forms the logits, calls
:func:`~attnbias.models.attention.selection_logit_grad` and chains its scaled, cancellation-free
logit gradient G (∂L/∂a = exp(log_scale)·G) to the weights,

    ∇_W L = exp(log_scale) Σ_iτ G_iτ x_iτ x_i1ᵀ,
    ∇_u L = (1/n) Σ_i ℓ'(z_i) y_i X_iᵀ s_i          (joint training only; also log-scaled).

For a fixed decoder the risk is bounded below by L* = (1/n) Σ_i ℓ(γ_{i,opt_i}).  The excess
L − L* is evaluated without cancellation from Δ_i = γ_{i,opt} − z_i = Σ_τ s_iτ (γ_{i,opt} − γ_iτ)
(a sum of non-negative terms, formed in log space): for the logistic loss
ℓ(z_i) − ℓ(γ_opt) = log1p(σ(−γ_opt)·expm1(Δ_i)).
"""

from __future__ import annotations

import numpy as np

from .attention import log_neg_dloss, logsumexp, loss_value, selection_logit_grad, softmax
from .prompt import token_scores


def queries(X: np.ndarray) -> np.ndarray:
    """The query tokens x_i1 (..., n, d)."""
    return X[..., 0, :]


def logits(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """a_iτ = x_iτᵀ W x_i1 for X (..., n, T, d) and W (..., d, d) → (..., n, T)."""
    Wq = np.matmul(queries(X), np.swapaxes(W, -1, -2))  # (..., n, d): row i is W x_i1
    return np.matmul(X, Wq[..., None])[..., 0]


def chain_W(X: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Σ_iτ G_iτ x_iτ x_i1ᵀ (..., d, d): the logit gradient G (..., n, T) chained to W."""
    r = np.matmul(G[..., None, :], X)[..., 0, :]  # (..., n, d): Σ_τ G_iτ x_iτ
    return np.matmul(np.swapaxes(r, -1, -2), queries(X))


def forward(X: np.ndarray, gamma: np.ndarray, W: np.ndarray, loss: str = "logistic") -> dict:
    """Risk and the scaled W-gradient for fixed token scores γ (..., n, T).

    Returns the dict of :func:`selection_logit_grad` plus ``grad_W`` (..., d, d), the W-gradient
    divided by exp(log_scale).
    """
    out = selection_logit_grad(logits(X, W), gamma, loss)
    out["grad_W"] = chain_W(X, out["G"])
    return out


def opt_tokens(gamma: np.ndarray) -> np.ndarray:
    """opt_i = argmax_τ γ_iτ (..., n)."""
    return np.argmax(gamma, axis=-1)


def log_excess_loss(
    log_s: np.ndarray, gamma: np.ndarray, opt: np.ndarray, loss: str = "logistic"
) -> np.ndarray:
    """log(L − L*) for a fixed decoder (..., ), with L* = (1/n) Σ_i ℓ(γ_{i,opt_i}),
    cancellation-free.

    Uses Δ_i = Σ_τ s_iτ (γ_{i,opt} − γ_iτ) ≥ 0 (log space; every term is non-negative) and
    ℓ(γ_opt − Δ) − ℓ(γ_opt) = log1p(σ(−γ_opt)·expm1(Δ)) (logistic) or e^{−γ_opt}·expm1(Δ)
    (exponential).  Returns −inf where the excess is exactly zero.
    """
    if loss not in ("logistic", "exponential"):
        raise ValueError("the excess loss is implemented for the logistic and exponential losses")
    opt = np.asarray(opt)[..., None]
    g_opt = np.take_along_axis(gamma, opt, axis=-1)
    d = g_opt - gamma  # ≥ 0, zero at opt
    with np.errstate(divide="ignore"):
        w = np.where(d > 0, log_s + np.log(np.where(d > 0, d, 1.0)), -np.inf)
    log_delta = logsumexp(w, axis=-1)  # (..., n)
    with np.errstate(under="ignore", over="ignore"):
        delta = np.exp(log_delta)
        # log expm1(Δ): series for tiny Δ keeps full relative precision
        log_em1 = np.where(
            delta < 1e-8, log_delta + 0.5 * delta, np.log(np.expm1(np.maximum(delta, 1e-300)))
        )
    g_opt = g_opt[..., 0]
    if loss == "logistic":
        log_x = log_neg_dloss(g_opt, "logistic") + log_em1  # log(σ(−γ_opt)·expm1(Δ))
        with np.errstate(under="ignore", over="ignore", divide="ignore"):
            x = np.exp(log_x)
            # log(log1p(x)) = log x + log(log1p(x)/x)
            corr = np.where(x < 1e-8, -0.5 * x, np.log(np.log1p(x) / np.where(x < 1e-8, 1.0, x)))
        log_ex = np.where(np.isneginf(log_x), -np.inf, log_x + corr)
    else:
        log_ex = -g_opt + log_em1
    n = gamma.shape[-2]
    return logsumexp(log_ex, axis=-1) - np.log(n)


def log_one_minus_sopt(log_s: np.ndarray, opt: np.ndarray) -> np.ndarray:
    """log(1 − s̄_opt) with s̄_opt = (1/n) Σ_i s_{i,opt_i}, from 1 − s_opt = Σ_{τ≠opt} s_τ
    (log space)."""
    opt = np.asarray(opt)[..., None]
    mask = np.arange(log_s.shape[-1]) == opt
    rest = logsumexp(np.where(mask, -np.inf, log_s), axis=-1)  # (..., n)
    return logsumexp(rest, axis=-1) - np.log(log_s.shape[-2])


def wonly_grad_fn(X: np.ndarray, gamma: np.ndarray, loss: str = "logistic"):
    """A ``grad_fn`` for :func:`attnbias.optim.fullbatch.run` over the block ``W`` (decoder fixed).

    ``X`` (..., n, T, d) and ``gamma`` (..., n, T) carry the batch axes of W (..., d, d).  The
    output has ``excess`` = L − L* (cancellation-free) for the Polyak step, and ``log_excess``.
    """
    opt = opt_tokens(gamma)

    def grad_fn(params):
        out = forward(X, gamma, params["W"], loss)
        log_ex = log_excess_loss(out["log_s"], gamma, opt, loss)
        with np.errstate(under="ignore"):
            excess = np.exp(log_ex)
        return {
            "loss": out["loss"],
            "excess": excess,
            "log_excess": log_ex,
            "grads": {"W": (out["grad_W"], out["log_scale"])},
            "log_s": out["log_s"],
        }

    return grad_fn


def log_risk(z: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """log L = log((1/n) Σ_i ℓ(z_i)) in log space (no underflow when every ℓ(z_i) is tiny)."""
    if loss == "logistic":
        # log ℓ(z) = log log1p(e^{−z}); for z > 30 log1p(e^{−z}) = e^{−z}(1 + O(e^{−z}))
        zc = np.minimum(z, 30.0)
        log_l = np.where(z > 30.0, -z, np.log(np.logaddexp(0.0, -zc)))
    elif loss == "exponential":
        log_l = -z
    else:
        raise ValueError("log_risk needs a positive loss (logistic or exponential)")
    return logsumexp(log_l, axis=-1) - np.log(z.shape[-1])


def joint_grad_fn(X: np.ndarray, y: np.ndarray, loss: str = "logistic"):
    """A ``grad_fn`` for joint training of θ = (W, u); the infimum of the risk is 0
    (``excess`` = L).

    ∇_W from the current scores γ = y uᵀx through :func:`forward`;
    ∇_u L = (1/n) Σ_i ℓ'(z_i) y_i X_iᵀ s_i, also returned up to a positive scale (log space), so
    neither block underflows before the other.  ``log_loss`` is log L evaluated in log space.
    """
    y = np.asarray(y, dtype=np.float64)
    n = X.shape[-3]

    def grad_fn(params):
        W, u = params["W"], params["u"]
        gamma = token_scores(X, y, u)
        out = forward(X, gamma, W, loss)
        log_c = log_neg_dloss(out["z"], loss) - np.log(n)  # log|ℓ'(z_i)| − log n
        log_scale_u = np.max(log_c, axis=-1)
        with np.errstate(under="ignore"):
            coef = -np.exp(log_c - log_scale_u[..., None]) * y  # ℓ'(z_i) y_i / n, scaled
        attended = np.matmul(out["s"][..., None, :], X)[..., 0, :]  # X_iᵀ s_i
        gu = np.matmul(coef[..., None, :], attended)[..., 0, :]
        log_loss = log_risk(out["z"], loss)
        with np.errstate(under="ignore"):
            excess = np.exp(log_loss)
        return {
            "loss": out["loss"],
            "excess": excess,
            "log_excess": log_loss,  # L* = 0: the Polyak step uses log L, which never underflows
            "log_loss": log_loss,
            "grads": {"W": (out["grad_W"], out["log_scale"]), "u": (gu, log_scale_u)},
            "log_s": out["log_s"],
            "z": out["z"],
        }

    return grad_fn


def risk(
    X: np.ndarray, y: np.ndarray, W: np.ndarray, u: np.ndarray, loss: str = "logistic"
) -> np.ndarray:
    """L(W, u) evaluated directly from the forward pass (for tests and finite differences)."""
    s = softmax(logits(X, W))
    z = np.sum(s * token_scores(X, y, u), axis=-1)
    return np.mean(loss_value(z, loss), axis=-1)
