"""The float64 toys of Kobayashi, Akram, von Oswald 2024 (CPU, seconds).

**Convention** (docs/papers/lowrank.md#conventions): weight decay enters as (λ/2)(‖A‖² + ‖B‖²),
whose nuclear-norm equivalent is λ‖A Bᵀ‖_*; decoupled decay θ ← θ − lr·λ·θ is the same (λ/2)‖θ‖²
penalty.

* ``compute_fig1``: the 5 × 5 toy ‖ABᵀ − D‖² + (λ/2)(‖A‖² + ‖B‖²) under plain GD, float64,
  vectorised over the λ grid (the batched runner of :mod:`attnbias.optim.fullbatch`).
* ``compute_figA``: the two-parameter toy (xᵀw − 1)², direct w or factorised w = a ⊙ b, under
  Adam + coupled L2 and AdamW (:func:`attnbias.optim.adam.adam_run`), float64, vectorised over
  (λ, initial point).
* ``compute_figL``: a 2-layer linear network W₂W₁ against a single matrix W on a full-rank
  teacher, fresh Gaussian batches, plain GD, float64, vectorised over λ.

Iterate t is the point after t updates (t = 0 is the initialisation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...metrics import rank as rk
from ...optim.adam import adam_run
from ...optim.fullbatch import run

CONVENTION = (
    "penalty (λ/2)(‖A‖² + ‖B‖²) ≡ λ‖ABᵀ‖_* at balance; decoupled decay θ ← θ − lr·λ·θ; "
    "the toy fit term ‖ABᵀ − D‖² has no ½, so s_i = max(d_i − λ/2, 0)"
)


def _spectrum_columns(S: np.ndarray, prefix: str = "s") -> dict:
    return {f"{prefix}{i + 1}": S[:, i] for i in range(S.shape[1])}


# ---------------------------------------------------------------------------------------------
# Figure 1: the 5 × 5 factorised toy


def fig1_grad_fn(D: np.ndarray, lams: np.ndarray):
    """Gradients of ‖ABᵀ − D‖_F² + (λ/2)(‖A‖² + ‖B‖²), batched over λ (A, B: (L, p, r), (L, q, r)).

    With G = 2(ABᵀ − D): ∇_A = G B + λA, ∇_B = Gᵀ A + λB.  Returns a grad_fn for
    :func:`attnbias.optim.fullbatch.run` (log-scale 0: the gradients are plain arrays).
    """
    lam = np.asarray(lams, dtype=np.float64)[:, None, None]

    def grad_fn(params):
        A, B = params["A"], params["B"]
        R = A @ np.swapaxes(B, -1, -2) - D
        G = 2.0 * R
        loss = np.sum(R * R, axis=(-2, -1)) + 0.5 * lam[:, 0, 0] * (
            np.sum(A * A, axis=(-2, -1)) + np.sum(B * B, axis=(-2, -1))
        )
        return {
            "loss": loss,
            "grads": {
                "A": (G @ B + lam * A, 0.0),
                "B": (np.swapaxes(G, -1, -2) @ A + lam * B, 0.0),
            },
            "G": G,
        }

    return grad_fn


def soft_threshold(d, lam) -> np.ndarray:
    """s_i = max(d_i − λ/2, 0): singular values minimising ‖W − D‖² + λ‖W‖_* (D diagonal, d ≥ 0)."""
    return np.maximum(
        np.asarray(d, dtype=np.float64)[None, :] - 0.5 * np.asarray(lam, dtype=np.float64)[:, None],
        0.0,
    )


def compute_fig1(
    lr: float, steps: int, init_std: float, seed: int, lambdas: list[float], d: list[float]
):
    """Fig 1: gap, imbalance and singular values of ABᵀ over plain-GD training, for every λ."""
    lams = np.asarray(lambdas, dtype=np.float64)
    D = np.diag(np.asarray(d, dtype=np.float64))
    n = D.shape[0]
    rng = np.random.default_rng(seed)
    A0 = init_std * rng.standard_normal((n, n))
    B0 = init_std * rng.standard_normal((n, n))
    L = len(lams)
    params0 = {"A": np.repeat(A0[None], L, 0), "B": np.repeat(B0[None], L, 0)}

    def observe(params, out):
        m = rk.product_metrics(params["A"], params["B"])
        return {k: m[k] for k in ("spectrum", "gap", "imbalance", "nuclear", "frob_bound")}

    traj = run(fig1_grad_fn(D, lams), params0, steps, method="gd", lr=lr, observe=observe)
    T = len(traj["t"])
    frame = {
        "lam": np.tile(lams, T),
        "t": np.repeat(traj["t"], L),
        "loss": traj["loss"].reshape(-1),
        "gap": traj["gap"].reshape(-1),
        "imbalance": traj["imbalance"].reshape(-1),
        "nuclear": traj["nuclear"].reshape(-1),
        "frob_bound": traj["frob_bound"].reshape(-1),
    }
    frame.update(_spectrum_columns(traj["spectrum"].reshape(T * L, -1)))
    df = pd.DataFrame(frame)
    meta = {
        "lr": lr,
        "steps": steps,
        "init_std": init_std,
        "seed": seed,
        "lambdas": lams,
        "d": list(map(float, d)),
        "convention": CONVENTION,
        "prediction": soft_threshold(d, lams),
        "stopped_at": traj["stopped_at"],
        "columns": {
            "lam": "weight decay λ (penalty (λ/2)(‖A‖² + ‖B‖²))",
            "t": "GD step (number of updates done)",
            "loss": "‖ABᵀ − D‖_F² + (λ/2)(‖A‖_F² + ‖B‖_F²)",
            "gap": "½(‖A‖² + ‖B‖²) − ‖ABᵀ‖_*",
            "imbalance": "‖AᵀA − BᵀB‖_F",
            "nuclear": "‖ABᵀ‖_*",
            "frob_bound": "½(‖A‖_F² + ‖B‖_F²)",
            **{f"s{i + 1}": f"singular value {i + 1} of ABᵀ (descending)" for i in range(n)},
        },
    }
    return df, meta


# ---------------------------------------------------------------------------------------------
# Appendix Fig. A: two-parameter toy, Adam + L2 against AdamW


def figA_grad(x: np.ndarray, parameterisation: str):
    """∇ of (xᵀw − 1)² for θ = w (direct) or θ = (a, b) with w = a ⊙ b (factorised)."""
    k = len(x)

    def grad(theta):
        if parameterisation == "direct":
            r = theta @ x - 1.0
            return 2.0 * r[:, None] * x[None, :]
        a, b = theta[:, :k], theta[:, k:]
        r = (a * b) @ x - 1.0
        gw = 2.0 * r[:, None] * x[None, :]
        return np.concatenate([gw * b, gw * a], axis=1)

    return grad


def compute_figA(
    lr: float,
    betas: list[float],
    eps: float,
    steps: int,
    lambdas: list[float],
    inits: list,
    x: list[float],
    record_every: int,
):
    """App. Fig. A: (w₁, w₂) paths under Adam + L2 and AdamW, direct and factorised."""
    xv = np.asarray(x, dtype=np.float64)
    lams = np.asarray(lambdas, dtype=np.float64)
    a0 = np.asarray(inits, dtype=np.float64)
    grid_l, grid_i = np.meshgrid(np.arange(len(lams)), np.arange(len(a0)), indexing="ij")
    grid_l, grid_i = grid_l.ravel(), grid_i.ravel()
    frames = []
    for par in ("direct", "factorised"):
        theta0 = (
            a0[grid_i] * a0[grid_i]
            if par == "direct"
            else np.concatenate([a0[grid_i], a0[grid_i]], axis=1)
        )
        for opt in ("adam_l2", "adamw"):
            ts, th = adam_run(
                figA_grad(xv, par),
                theta0,
                steps,
                lr,
                betas,
                eps,
                lams[grid_l],
                opt == "adamw",
                record_every,
            )
            w = th if par == "direct" else th[..., :2] * th[..., 2:]
            R, N = w.shape[:2]
            frames.append(
                pd.DataFrame(
                    {
                        "parameterisation": par,
                        "optimizer": opt,
                        "lam": np.tile(lams[grid_l], R),
                        "init": np.tile(grid_i, R),
                        "t": np.repeat(ts, N),
                        "w1": w[..., 0].ravel(),
                        "w2": w[..., 1].ravel(),
                        "loss": ((w @ xv - 1.0) ** 2).ravel(),
                    }
                )
            )
    meta = {
        "lr": lr,
        "betas": betas,
        "eps": eps,
        "steps": steps,
        "lambdas": lams,
        "inits": a0,
        "x": xv,
        "convention": (
            "Adam + L2 adds λθ to the gradient; AdamW applies θ ← θ(1 − lr·λ) before the Adam step"
        ),
        "prediction_direct": [2 * xv / (np.sum(xv * xv) * 2 + lam) for lam in lams],
        "prediction_factorised": [[0.0, 0.5 - lam / 8] for lam in lams],
        "columns": {
            "parameterisation": "direct (w) or factorised (w = a ⊙ b, b₀ = a₀)",
            "optimizer": "adam_l2 (coupled L2) or adamw (decoupled decay)",
            "lam": "weight-decay strength λ",
            "init": "index of the initial point (meta inits; direct runs start at w = a ⊙ a)",
            "t": "optimiser step",
            "w1": "first coordinate of w",
            "w2": "second coordinate of w",
            "loss": "(xᵀw − 1)²",
        },
    }
    return pd.concat(frames, ignore_index=True), meta


# ---------------------------------------------------------------------------------------------
# figL (proposal): 2-layer linear network against a single matrix


def figL_teacher(
    dim: int, sigma_step: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """W* = U diag(σ) Vᵀ with σ_i = sigma_step·i and Haar-random U, V; returns (W*, σ descending,
    rng)."""
    rng = np.random.default_rng(seed)

    def haar(n):
        Q, R = np.linalg.qr(rng.standard_normal((n, n)))
        return Q * np.sign(np.diag(R))[None, :]

    sig = sigma_step * np.arange(dim, 0, -1, dtype=np.float64)
    U, V = haar(dim), haar(dim)
    return (U * sig[None, :]) @ V.T, sig, rng


def compute_figL(
    dim: int,
    hidden: int,
    sigma_step: float,
    noise: float,
    batch: int,
    lr: float,
    steps: int,
    init_std: float,
    lambdas: list[float],
    teacher_seed: int,
    noise_seed: int,
    record_every: int,
):
    """figL: spectra of W₂W₁ (factorised, (λ/2)(‖W₁‖² + ‖W₂‖²)) and of W ((λ/2)‖W‖²) over GD."""
    lams = np.asarray(lambdas, dtype=np.float64)
    L = len(lams)
    Wstar, sig, rng = figL_teacher(dim, sigma_step, teacher_seed)
    W1 = init_std * rng.standard_normal((hidden, dim))
    W2 = init_std * rng.standard_normal((dim, hidden))
    W0 = init_std * rng.standard_normal((dim, dim))
    params0 = {k: np.repeat(v[None], L, 0) for k, v in (("W1", W1), ("W2", W2), ("W", W0))}
    noise_rng = np.random.default_rng(noise_seed)
    lam = lams[:, None, None]

    def grad_fn(p):
        X = noise_rng.standard_normal((dim, batch))
        Y = Wstar @ X + noise * noise_rng.standard_normal((dim, batch))
        Wf = p["W2"] @ p["W1"]
        Rf, Rs = Wf @ X - Y, p["W"] @ X - Y
        Gf, Gs = (2.0 / batch) * Rf @ X.T, (2.0 / batch) * Rs @ X.T  # ∇ of the batch loss in W
        loss = np.sum(Rf * Rf, axis=(-2, -1)) / batch
        return {
            "loss": loss,
            "grads": {
                "W1": (np.swapaxes(p["W2"], -1, -2) @ Gf + lam * p["W1"], 0.0),
                "W2": (Gf @ np.swapaxes(p["W1"], -1, -2) + lam * p["W2"], 0.0),
                "W": (Gs + lam * p["W"], 0.0),
            },
            "loss_single": np.sum(Rs * Rs, axis=(-2, -1)) / batch,
        }

    def observe(p, out):
        mf = rk.product_metrics(p["W2"], np.swapaxes(p["W1"], -1, -2))
        s1 = rk.singular_values(p["W1"])
        ss = rk.singular_values(p["W"])
        return {
            "loss_single": out["loss_single"],
            "s_fact": mf["spectrum"],
            "s_w1": s1,
            "s_single": ss,
            "gap": mf["gap"],
            "imbalance": mf["imbalance"],
            "alive": np.sum(
                np.linalg.norm(p["W1"], axis=-1) * np.linalg.norm(p["W2"], axis=-2)
                > 1e-2
                * np.max(
                    np.linalg.norm(p["W1"], axis=-1) * np.linalg.norm(p["W2"], axis=-2),
                    axis=-1,
                    keepdims=True,
                ),
                axis=-1,
            ),
        }

    record = list(range(0, steps + 1, record_every)) + ([steps] if steps % record_every else [])
    traj = run(grad_fn, params0, steps, method="gd", lr=lr, record_at=record, observe=observe)
    R = len(traj["t"])
    frames = []
    for model, key in (("factorised", "s_fact"), ("single", "s_single")):
        S = traj[key].reshape(R * L, -1)
        f = {
            "model": model,
            "lam": np.tile(lams, R),
            "t": np.repeat(traj["t"], L),
            "loss": (traj["loss"] if model == "factorised" else traj["loss_single"]).reshape(-1),
            "rank_1e2": rk.numerical_rank(S, 1e-2),
            "rank_1e3": rk.numerical_rank(S, 1e-3),
            "eff_rank": rk.effective_rank(S),
        }
        if model == "factorised":
            S1 = traj["s_w1"].reshape(R * L, -1)
            f.update(
                w1_rank_1e2=rk.numerical_rank(S1, 1e-2),
                gap=traj["gap"].reshape(-1),
                imbalance=traj["imbalance"].reshape(-1),
                alive_units=traj["alive"].reshape(-1),
            )
        else:
            f.update(w1_rank_1e2=np.nan, gap=np.nan, imbalance=np.nan, alive_units=np.nan)
        f.update(_spectrum_columns(S))
        frames.append(pd.DataFrame(f))
    meta = {
        "dim": dim,
        "hidden": hidden,
        "sigma": sig,
        "noise": noise,
        "batch": batch,
        "lr": lr,
        "steps": steps,
        "init_std": init_std,
        "lambdas": lams,
        "teacher_seed": teacher_seed,
        "noise_seed": noise_seed,
        "convention": (
            "loss (1/B)Σ‖ŷ − y‖² (expectation ‖W − W*‖² + const) + (λ/2)‖·‖² on every weight matrix"
        ),
        "prediction_factorised": soft_threshold(sig, lams),
        "prediction_single": sig[None, :] / (1.0 + lams[:, None] / 2.0),
        "expected_rank_factorised": np.sum(soft_threshold(sig, lams) > 0, axis=1),
        "columns": {
            "model": "factorised (W₂W₁, hidden width `hidden`) or single (W)",
            "lam": "weight decay λ (penalty (λ/2)‖·‖_F² per matrix)",
            "t": "GD step",
            "loss": "fresh-batch loss (1/B)Σ‖ŷ − y‖² at this step (without the penalty)",
            "rank_1e2": "#{σ_i > 10⁻²σ₁} of the end-to-end matrix",
            "rank_1e3": "#{σ_i > 10⁻³σ₁} of the end-to-end matrix",
            "eff_rank": "effective rank of the end-to-end matrix",
            "w1_rank_1e2": "#{σ_i > 10⁻²σ₁} of W₁ (factorised only)",
            "gap": "½(‖W₁‖² + ‖W₂‖²) − ‖W₂W₁‖_* (factorised only)",
            "imbalance": "‖W₂ᵀW₂ − W₁W₁ᵀ‖_F (factorised only)",
            "alive_units": (
                "hidden units with ‖W₁[j]‖·‖W₂[:, j]‖ > 10⁻² × the largest "
                "(reported only; basis-dependent)"
            ),
            **{f"s{i + 1}": f"singular value {i + 1} of the end-to-end matrix" for i in range(dim)},
        },
    }
    return pd.concat(frames, ignore_index=True), meta
