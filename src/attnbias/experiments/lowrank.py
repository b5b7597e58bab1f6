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
                 eval_samples: int, spectra_at: list[int], accelerator: str = "cpu", weights_path: str | None = None):  # fmt: skip
    """One associative-recall run with AdamW (decay λ on the attention matrices only).

    Logs per-head rank/balance metrics of KQ and PV every ``log_every`` steps (spectra at
    ``spectra_at`` and at the end) and the final accuracy on ``eval_samples`` fresh samples.
    """
    import torch
    import torch.nn.functional as F

    from ..data.recall import EVAL_STREAM, RecallTask
    from ..models.recall import RecallTransformer

    dev = _device(accelerator)
    task = RecallTask(n_pairs, n_keys, n_values)
    torch.manual_seed(seed)
    model = RecallTransformer(task.vocab, task.seq_len, d_model, n_heads, n_layers).to(dev)
    opt = torch.optim.AdamW(model.param_groups(lam), lr=lr, betas=tuple(betas), eps=eps)
    spectra = set(int(s) for s in spectra_at) | {steps}
    rows, t0 = [], time.perf_counter()
    for step in range(steps + 1):
        x, y = (torch.from_numpy(a).to(dev) for a in task.batch(batch, seed, step))
        loss = F.cross_entropy(model(x, last_only=True), y)
        if step % log_every == 0 or step == steps:
            for r in _head_rows(model, step, step in spectra):
                r["train_loss"] = float(loss.detach())
                rows.append(r)
            log.info("λ=%g seed=%d step %d loss %.4f (%.1f s)", lam, seed, step, float(loss.detach()), time.perf_counter() - t0)
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    correct = 0
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
        "columns": dict(RECALL_COLUMNS, **{f"s{i + 1}": f"singular value {i + 1} (at spectra steps and the end; else NaN)" for i in range(d_model // n_heads)}),
    }
    return df, meta


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
