"""Batched float64 Adam for small numpy problems (lowrank App. Fig. A).

N independent problems are stepped at once: θ has shape (N, k) and every row has its own weight
decay λ_n.  With the gradient g_t of the loss (plus λθ under coupled L2),

    m_t = β₁ m_{t−1} + (1 − β₁) g_t,        v_t = β₂ v_{t−1} + (1 − β₂) g_t²,
    θ_t = θ_{t−1} − lr · m̂_t / (√v̂_t + ε),  m̂_t = m_t / (1 − β₁ᵗ),  v̂_t = v_t / (1 − β₂ᵗ).

Two ways to add weight decay:

* **coupled L2** (``decoupled=False``, ``torch.optim.Adam(weight_decay=λ)``): g_t ← g_t + λθ_{t−1},
  i.e. the penalty (λ/2)‖θ‖² goes through the adaptive normalisation;
* **decoupled** (``decoupled=True``, ``torch.optim.AdamW``): θ ← θ(1 − lr·λ) before the Adam step,
  outside the normalisation.
"""

from __future__ import annotations

import numpy as np


def adam_run(
    grad_fn,
    theta0: np.ndarray,
    steps: int,
    lr: float,
    betas,
    eps: float,
    lam: np.ndarray,
    decoupled: bool,
    record_every: int = 1,
):
    """Batched float64 Adam: coupled L2 (g ← g + λθ) or decoupled AdamW (θ ← θ(1 − lr·λ) first).

    ``theta0`` (N, k); ``lam`` (N,).  Matches ``torch.optim.Adam``/``AdamW`` (bias-corrected, eps
    outside the square root).  Returns the recorded steps and parameters (R, N, k).
    """
    b1, b2 = betas
    theta = np.array(theta0, dtype=np.float64, copy=True)
    lam = np.asarray(lam, dtype=np.float64)[:, None]
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    ts, rec = [0], [theta.copy()]
    for t in range(1, steps + 1):
        g = grad_fn(theta)
        if decoupled:
            theta = theta * (1.0 - lr * lam)
        else:
            g = g + lam * theta
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1**t)
        vhat = v / (1 - b2**t)
        theta = theta - lr * mhat / (np.sqrt(vhat) + eps)
        if t % record_every == 0 or t == steps:
            ts.append(t)
            rec.append(theta.copy())
    return np.asarray(ts), np.stack(rec)
