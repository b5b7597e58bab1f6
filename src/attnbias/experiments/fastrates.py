"""Figure data for Vasudeva, Deora, Thrampoulidis, *Implicit Bias and Fast Convergence Rates for
Self-attention* (spec ``fastrates.md``): the synthetic figures 2, 3, 5 and the proposals 8–10 and
Table 1.

Each ``compute_<group>`` returns ``(DataFrame, meta)``.  The DataFrame is tidy (one row per method,
data seed, initialisation, step size and recorded iteration t; t = 0 is the initial point) and
``meta["columns"]`` documents it.  All runs are float64, batched over seeds (and initialisations)
through :func:`attnbias.optim.fullbatch.run`, with the gradients of
:mod:`attnbias.models.selfattn`.  Quantities that decay to 0 are stored as log10 values computed in
log space (the excess loss, 1 − s̄_opt, 1 − corr), so nothing underflows in the data files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import fastrates as fd
from ..models.attention import loss_value
from ..models.prompt import token_scores
from ..models.selfattn import joint_grad_fn, log_one_minus_sopt, wonly_grad_fn
from ..optim.fullbatch import run
from ..svm.frobenius import w_mm

METHODS = ("gd", "ngd", "polyak")
LABELS = {"gd": "GD", "ngd": "NGD", "polyak": "PS"}
LN10 = np.log(10.0)
# iterations that the claims read; always recorded when within the run
KEY_TIMES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)

COLUMNS = {
    "method": "update rule: gd (constant step), ngd (normalised GD) or polyak (Polyak step, PS)",
    "seed": "data seed",
    "init": "initialisation index within the data seed (0 for W0 = 0)",
    "lr": "step size η (the Polyak multiplier for polyak)",
    "t": "iteration (number of updates done)",
    "loss": "training loss L(W_t) (plain; for joint training the infimum is 0)",
    "log10_excess": "log10(L − L*): excess loss over L* = (1/n) Σ ℓ(γ_opt) (fixed u) or log10 L (joint)",
    "sopt": "s̄_opt = (1/n) Σ_i s_{i,opt_i}",
    "log10_one_minus_sopt": "log10(1 − s̄_opt), from Σ_{τ≠opt} s_iτ in log space",
    "norm_W": "‖W_t‖_F",
    "log10_one_minus_corr": "log10(1 − corr(W_t, W_mm)), 1 − corr = ½‖W_t/‖W_t‖ − W_mm/‖W_mm‖‖² (1 at W = 0)",
}
JOINT_COLUMNS = {
    "norm_u": "‖u_t‖₂",
    "log10_one_minus_corr_u": "log10(1 − corr(u_t, u_mm))",
}


def record_grid(steps: int, per_decade: int = 40) -> list[int]:
    """Recorded iterations: 0..10, a log-spaced grid, the claim times of KEY_TIMES, and ``steps``."""
    grid = np.unique(np.round(np.logspace(0, np.log10(max(steps, 1)), per_decade * max(1, int(np.ceil(np.log10(max(steps, 2))))))).astype(int))
    pts = set(range(min(steps, 10) + 1)) | {int(g) for g in grid} | {t for t in KEY_TIMES if t <= steps} | {steps}
    return sorted(t for t in pts if 0 <= t <= steps)


def log10_one_minus_corr(A: np.ndarray, B: np.ndarray, axes: tuple) -> np.ndarray:
    """log10(1 − corr(A, B)) over ``axes`` as ½‖Â − B̂‖² (no 1 − cos cancellation); 0 where A = 0."""
    na = np.sqrt(np.sum(A * A, axis=axes, keepdims=True))
    nb = np.sqrt(np.sum(B * B, axis=axes, keepdims=True))
    v = 0.5 * np.sum((A / np.where(na > 0, na, 1.0) - B / nb) ** 2, axis=axes)
    v = np.where(np.squeeze(na, axis=axes) > 0, v, 1.0)
    with np.errstate(divide="ignore"):
        return np.log10(v)


def _wmm_batch(datas: list[fd.SeqData]) -> tuple[np.ndarray, dict]:
    """W_mm per data seed (dual QP) and a summary of feasibility and the active set."""
    sols = [w_mm(d.X, d.opt) for d in datas]
    info = {
        "wmm_norm": [s.norm for s in sols],
        "wmm_min_margin": [float(s.margins.min()) for s in sols],
        "wmm_n_active": [int(s.active(1e-6).sum()) for s in sols],
        "wmm_n_constraints": [len(s.margins) for s in sols],
        "wmm_solver": "dual",
    }
    return np.stack([s.W for s in sols]), info


def _frame(method, lr, traj, seeds, inits, extra_cols=()) -> pd.DataFrame:
    """Flatten a run (R records × B batch) into rows."""
    R = len(traj["t"])
    Bn = len(seeds)
    cols = {
        "method": method,
        "seed": np.tile(seeds, R),
        "init": np.tile(inits, R),
        "lr": lr,
        "t": np.repeat(traj["t"], Bn),
        "loss": traj["loss"].reshape(-1),
    }
    for k in ("log10_excess", "sopt", "log10_one_minus_sopt", "norm_W", "log10_one_minus_corr", *extra_cols):
        cols[k] = traj[k].reshape(-1)
    return pd.DataFrame(cols)


def _wonly_observer(opt: np.ndarray, Wmm: np.ndarray):
    def observe(params, out):
        W = params["W"]
        l1ms = log_one_minus_sopt(out["log_s"], opt)
        return {
            "log10_excess": out["log_excess"] / LN10,
            "sopt": -np.expm1(l1ms),
            "log10_one_minus_sopt": l1ms / LN10,
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "log10_one_minus_corr": log10_one_minus_corr(W, Wmm, (-2, -1)),
        }

    return observe


def wonly_runs(
    datas: list[fd.SeqData],
    runs: list[tuple[str, float, int]],
    inits_per_seed: int = 1,
    init_scale: float = 0.0,
    polyak_cap: float | None = None,
    per_decade: int = 40,
) -> tuple[pd.DataFrame, dict]:
    """W-only training (decoder fixed to the data's u) for each (method, lr, steps) in ``runs``.

    Batch = data seeds × initialisations.  W0 = 0, or i.i.d. N(0, init_scale²) entries drawn from
    ``default_rng([seed, 1000 + init])`` when ``init_scale > 0``.
    """
    S, n_init = len(datas), inits_per_seed
    st = fd.stack(datas)
    rep = lambda a: np.repeat(a, n_init, axis=0)  # noqa: E731
    X, y, u, opt = rep(st["X"]), rep(st["y"]), rep(st["u"]), rep(st["opt"])
    gamma = token_scores(X, y, u)
    Wmm_s, info = _wmm_batch(datas)
    Wmm = rep(Wmm_s)
    d = X.shape[-1]
    seeds = np.repeat([dd.meta["seed"] for dd in datas], n_init)
    inits = np.tile(np.arange(n_init), S)
    W0 = np.zeros((S * n_init, d, d))
    if init_scale > 0:
        for b in range(S * n_init):
            W0[b] = init_scale * np.random.default_rng([int(seeds[b]), 1000 + int(inits[b])]).standard_normal((d, d))
    grad_fn = wonly_grad_fn(X, gamma)
    observe = _wonly_observer(opt, Wmm)
    frames, stopped = [], {}
    for method, lr, steps in runs:
        traj = run(grad_fn, {"W": W0}, steps, method=method, lr=lr, record_at=record_grid(steps, per_decade), observe=observe, polyak_cap=polyak_cap)
        frames.append(_frame(method, lr, traj, seeds, inits))
        stopped[f"{method}@{lr:g}"] = traj["stopped_at"]
    g_opt = np.take_along_axis(token_scores(st["X"], st["y"], st["u"]), st["opt"][..., None], -1)[..., 0]
    loss_star = np.mean(loss_value(g_opt, "logistic"), axis=-1)  # L* = (1/n) Σ ℓ(γ_opt)
    meta = dict(info)
    meta.update(
        {
            "seeds": [dd.meta["seed"] for dd in datas],
            "loss_star": loss_star,
            "score_gap": [dd.score_gap for dd in datas],
            "opt": st["opt"],
            "stopped_at": stopped,
            "inits_per_seed": n_init,
            "init_scale": init_scale,
            "polyak_cap": polyak_cap,
            "decoder": "fixed (u of the data model)",
            "W0": "0" if init_scale == 0 else f"N(0, {init_scale:g}²) entries",
            "columns": dict(COLUMNS),
        }
    )
    return pd.concat(frames, ignore_index=True), meta


def _data(model: str, n: int, T: int, d: int, sigma: float, seeds: list[int], opt_at_query: bool = True) -> list[fd.SeqData]:
    if model == "orth":
        return [fd.orth_data(n, T, d, sigma, s, opt_at_query) for s in seeds]
    if model == "antipodal":
        return [fd.antipodal_data(n, T, d, s, opt_at_query) for s in seeds]
    raise ValueError(f"unknown W-only data model {model!r}")


def _wonly_figure(model, n, T, d, sigma, seeds, lr, polyak_lr, steps_gd, steps_fast, polyak_cap, per_decade, opt_at_query=True):
    datas = _data(model, n, T, d, sigma, seeds, opt_at_query)
    runs = [("gd", lr, steps_gd), ("ngd", lr, steps_fast), ("polyak", polyak_lr, steps_fast)]
    df, meta = wonly_runs(datas, runs, polyak_cap=polyak_cap, per_decade=per_decade)
    meta.update({"data_model": model, "n": n, "T": T, "d": d, "sigma": sigma, "lr": lr, "polyak_lr": polyak_lr, "steps_gd": steps_gd, "steps_fast": steps_fast, "opt_at_query": opt_at_query})
    return df, meta


def compute_fig2(n: int, T: int, d: int, sigma: float, seeds: list[int], lr: float, steps_gd: int, steps_fast: int, polyak_lr: float = 1.0, polyak_cap: float | None = None, per_decade: int = 40):
    """Fig 2 (and the Table 1 fits): W-only GD / NGD / PS on Example 1 (nearly orthogonal tokens)."""
    return _wonly_figure("orth", n, T, d, sigma, seeds, lr, polyak_lr, steps_gd, steps_fast, polyak_cap, per_decade)


def compute_fig5(n: int, T: int, d: int, seeds: list[int], lr: float, steps_gd: int, steps_fast: int, polyak_lr: float = 1.0, opt_at_query: bool = False, polyak_cap: float | None = None, per_decade: int = 40):
    """Fig 5: W-only GD / NGD / PS with antipodal opt tokens.

    ``opt_at_query=False`` (project choice): no opt token sits at the query position.  When it
    does, that query is ±u* itself, shared across sequences, and from W₀ = 0 NGD can converge to a
    selection other than opt (L − L* then stays bounded away from 0 and the Polyak step diverges).
    """
    return _wonly_figure("antipodal", n, T, d, 0.0, seeds, lr, polyak_lr, steps_gd, steps_fast, polyak_cap, per_decade, opt_at_query)


def compute_fig8(n: int, T: int, d: int, sigma: float, seeds: list[int], lr: float, steps_gd: int, steps_fast: int, polyak_lr: float = 1.0, polyak_cap: float | None = None, per_decade: int = 40):
    """Fig 8 (proposal): Fig 2 with noisy tokens (σ > 0)."""
    return _wonly_figure("orth", n, T, d, sigma, seeds, lr, polyak_lr, steps_gd, steps_fast, polyak_cap, per_decade)


def compute_fig9(n: int, T: int, d: int, sigma: float, seeds: list[int], inits: int, init_scale: float, lr: float, steps_gd: int, steps_fast: int, polyak_lr: float = 1.0, polyak_cap: float | None = None, per_decade: int = 20):
    """Fig 9 (proposal): Fig 2 from random initialisations W0 ~ N(0, init_scale²) (global convergence)."""
    datas = _data("orth", n, T, d, sigma, seeds)
    runs = [("gd", lr, steps_gd), ("ngd", lr, steps_fast), ("polyak", polyak_lr, steps_fast)]
    df, meta = wonly_runs(datas, runs, inits_per_seed=inits, init_scale=init_scale, polyak_cap=polyak_cap, per_decade=per_decade)
    meta.update({"data_model": "orth", "n": n, "T": T, "d": d, "sigma": sigma, "lr": lr, "polyak_lr": polyak_lr, "steps_gd": steps_gd, "steps_fast": steps_fast})
    return df, meta


def compute_fig10(n: int, T: int, d: int, sigma: float, seeds: list[int], lrs: list[float], steps: int, per_decade: int = 10):
    """Fig 10 (proposal): step-size sweep of GD and NGD on the Fig 2 data (last iterate vs η)."""
    datas = _data("orth", n, T, d, sigma, seeds)
    runs = [(m, float(lr), steps) for lr in lrs for m in ("gd", "ngd")]
    df, meta = wonly_runs(datas, runs, per_decade=per_decade)
    meta.update({"data_model": "orth", "n": n, "T": T, "d": d, "sigma": sigma, "lrs": lrs, "steps": steps})
    return df, meta


def compute_fig3(n: int, T: int, d: int, sigma: float, seeds: list[int], lr: float, steps: int, polyak_lr: float = 1.0, normalize: str = "joint", polyak_cap: float | None = None, per_decade: int = 40):
    """Fig 3: joint training of (W, u) on the Gaussian-like data model, from W0 = 0, u0 = 0.

    NGD normalises by the norm of the concatenated gradient (``normalize="joint"``) or each block
    separately (``"block"``); PS uses L* = 0.  W_mm uses the data's opt tokens, u_mm is the data's
    decoder (the hard-margin SVM on the opt tokens).
    """
    datas = [fd.gaussian_data(n, T, d, sigma, s) for s in seeds]
    st = fd.stack(datas)
    X, y, opt, umm = st["X"], st["y"], st["opt"], st["u"]
    Wmm, info = _wmm_batch(datas)
    S = len(seeds)
    params0 = {"W": np.zeros((S, d, d)), "u": np.zeros((S, d))}

    def observe(params, out):
        W, u = params["W"], params["u"]
        l1ms = log_one_minus_sopt(out["log_s"], opt)
        return {
            "log10_excess": out["log_loss"] / LN10,
            "sopt": -np.expm1(l1ms),
            "log10_one_minus_sopt": l1ms / LN10,
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "log10_one_minus_corr": log10_one_minus_corr(W, Wmm, (-2, -1)),
            "norm_u": np.linalg.norm(u, axis=-1),
            "log10_one_minus_corr_u": log10_one_minus_corr(u, umm, (-1,)),
        }

    frames, stopped = [], {}
    grad_fn = joint_grad_fn(X, y)
    for method in METHODS:
        m_lr = polyak_lr if method == "polyak" else lr
        traj = run(grad_fn, params0, steps, method=method, lr=m_lr, normalize=normalize, record_at=record_grid(steps, per_decade), observe=observe, loss_star=0.0, polyak_cap=polyak_cap)
        frames.append(_frame(method, m_lr, traj, np.asarray(seeds), np.zeros(S, dtype=int), extra_cols=tuple(JOINT_COLUMNS)))
        stopped[method] = traj["stopped_at"]
    meta = dict(info)
    meta.update(
        {
            "data_model": "gaussian",
            "n": n,
            "T": T,
            "d": d,
            "sigma": sigma,
            "seeds": seeds,
            "lr": lr,
            "polyak_lr": polyak_lr,
            "steps": steps,
            "normalize": normalize,
            "polyak_cap": polyak_cap,
            "loss_star": 0.0,
            "umm_norm": np.linalg.norm(umm, axis=-1),
            "redraws": [dd.meta["redraws"] for dd in datas],
            "score_gap_umm": [dd.score_gap for dd in datas],
            "stopped_at": stopped,
            "W0": "0",
            "u0": "0",
            "columns": dict(COLUMNS, **JOINT_COLUMNS),
        }
    )
    return pd.concat(frames, ignore_index=True), meta


# --------------------------------------------------------------------------- Table 1 (proposal)


def _fit(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y against x (NaN with fewer than two finite points)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(x[ok], y[ok], 1)[0])


RATE_COLUMNS = {
    "align_loglog": "slope of log10(1 − corr) against log10 t over t ∈ [100, 1000]",
    "sat_exp": "slope of log10(1 − s̄_opt) against t over t ∈ [10, 100] (exponential rate)",
    "sat_loglog": "slope of log10(1 − s̄_opt) against log10 t over t ∈ [10, 100] (polynomial rate)",
    "norm_rate": "slope of ‖W_t‖_F against t over t ∈ [100, 1000]",
    "loss_exp": "slope of log10(L − L*) against t over t ∈ [10, 100]",
}


def rate_table(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1 (proposal): fitted rates per method (mean and sd over seeds) from the Fig 2 runs."""
    rows = []
    for method in METHODS:
        per_seed = []
        for _, g in df[df.method == method].groupby(["seed", "init"]):
            g = g.sort_values("t")
            t = g.t.to_numpy(dtype=float)
            a = (t >= 100) & (t <= 1000)
            b = (t >= 10) & (t <= 100)
            per_seed.append(
                {
                    "align_loglog": _fit(np.log10(t[a]), g.log10_one_minus_corr.to_numpy()[a]),
                    "sat_exp": _fit(t[b], g.log10_one_minus_sopt.to_numpy()[b]),
                    "sat_loglog": _fit(np.log10(t[b]), g.log10_one_minus_sopt.to_numpy()[b]),
                    "norm_rate": _fit(t[a], g.norm_W.to_numpy()[a]),
                    "loss_exp": _fit(t[b], g.log10_excess.to_numpy()[b]),
                }
            )
        ps = pd.DataFrame(per_seed)
        row = {"method": method, "lr": float(df[df.method == method].lr.iloc[0]), "n_seeds": len(ps)}
        for k in RATE_COLUMNS:
            row[k] = float(ps[k].mean())
            row[f"{k}_sd"] = float(ps[k].std(ddof=0))
        rows.append(row)
    return pd.DataFrame(rows)


def write_rate_table(df: pd.DataFrame, csv_path, md_path) -> pd.DataFrame:
    """Write Table 1 (proposal) as CSV and as a Markdown table (mean ± sd over seeds)."""
    tab = rate_table(df)
    tab.to_csv(csv_path, index=False, float_format="%.6g")
    head = "| method | step | " + " | ".join(RATE_COLUMNS) + " |"
    lines = [
        "Table 1 (proposal): rates fitted on the Fig 2 runs, mean ± sd over seeds.",
        "",
        head,
        "|" + "---|" * (len(RATE_COLUMNS) + 2),
    ]
    for _, r in tab.iterrows():
        cells = [f"{r[k]:.4g} ± {r[k + '_sd']:.2g}" for k in RATE_COLUMNS]
        lines.append(f"| {LABELS[r.method]} | {r.lr:g} | " + " | ".join(cells) + " |")
    lines += ["", "Columns:"] + [f"- `{k}`: {v}" for k, v in RATE_COLUMNS.items()]
    with open(md_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return tab


# =========================================================================== deep-learning figures
# Figs 1 and 4 (BERT fine-tuning) and the proposal Fig 7 (ViT-small): SGD vs SNGD vs SPS vs AdamW.
# One training run per (figure, optimiser, grid value) — its own Snakemake job — returns a tidy
# curve table; :func:`gather_dl` picks, per optimiser, the grid value with the lowest *validation*
# loss at the selection step and writes the plot-ready table.  The proposal Fig 6 (MNIST, the
# paper's one-layer model, full-batch GD / NGD / PS) is :func:`compute_fig6`.

DL_OPTIMIZERS = ("sgd", "sngd", "sps", "adamw")
DL_LABELS = {"sgd": "SGD", "sngd": "SNGD", "sps": "SPS", "adamw": "AdamW"}

DL_COLUMNS = {
    "optimizer": "sgd | sngd | sps | adamw",
    "lr": "grid value of the run: the learning rate (SGD, AdamW), η (SNGD; the SGD learning rate it is matched to when match_sgd) or the cap γ_b (SPS)",
    "step": "optimisation steps done (0 = before training)",
    "train_loss": "mean minibatch cross-entropy over the steps since the previous row (NaN at step 0)",
    "train_acc": "mean minibatch accuracy over the steps since the previous row (NaN at step 0)",
    "test_loss": "cross-entropy on the test set (NaN where not evaluated)",
    "test_acc": "accuracy on the test set (NaN where not evaluated)",
    "val_loss": "cross-entropy on the validation split, which selects the learning rate (NaN where not evaluated)",
    "val_acc": "accuracy on the validation split (NaN where not evaluated)",
}
IMAGE_COLUMNS = {"epoch": "epochs done (0 = before training)"}
GATHER_COLUMNS = {"selected": "true for the grid value chosen for this optimiser (lowest validation loss at the selection step)"}


def _register_dl_optimizers() -> None:
    """Register ``adamw_clip`` in the engine's optimiser table: AdamW with global-norm gradient
    clipping and an optional linear decay of the learning rate to 0 (the BERT fine-tuning recipe)."""
    import torch

    from ..train.engine import OPTIMIZERS

    if "adamw_clip" in OPTIMIZERS:
        return

    class ClippedAdamW(torch.optim.AdamW):
        """AdamW whose ``step`` first clips the global gradient norm to ``max_grad_norm`` (None: off)
        and sets lr = base_lr · (1 − k/total_steps) at step k (``total_steps`` None: constant).  The
        step count k is read from the optimiser state, so a resumed run continues the schedule."""

        def __init__(self, params, lr: float, max_grad_norm: float | None = None, total_steps: int | None = None, **kw):
            super().__init__(params, lr=lr, **kw)
            for g in self.param_groups:
                g.setdefault("base_lr", g["lr"])
                g["max_grad_norm"] = max_grad_norm
                g["total_steps"] = total_steps

        def _steps_done(self) -> int:
            for st in self.state.values():
                if "step" in st:
                    return int(st["step"])
            return 0

        @torch.no_grad()
        def step(self, closure=None):
            clip = self.param_groups[0]["max_grad_norm"]
            if clip:
                torch.nn.utils.clip_grad_norm_([p for g in self.param_groups for p in g["params"] if p.grad is not None], clip)
            total = self.param_groups[0]["total_steps"]
            if total:
                k = self._steps_done()
                for g in self.param_groups:
                    g["lr"] = g["base_lr"] * max(0.0, 1.0 - k / total)
            return super().step(closure)

    OPTIMIZERS["adamw_clip"] = lambda params, c: ClippedAdamW(params, lr=c.lr, **{"weight_decay": c.weight_decay, **c.extra})


def _batch_indices(perm, s: int, batch_size: int):
    """The engine's minibatch s of one permutation (wrapping around, like ``fit``)."""
    import torch

    n = len(perm)
    idx = perm[(s * batch_size) % n : (s * batch_size) % n + batch_size]
    if len(idx) < batch_size:
        idx = torch.cat([idx, perm[: batch_size - len(idx)]])
    return idx


def sgd_probe_norms(model, data: dict, loss_fn, batch_size: int, lr: float, steps: int, seed: int, device, image_key: str | None = None, augment_pad: int = 0, augment_flip: bool = False) -> list[float]:
    """‖g_B‖ (global L2 norm over all parameters) at each of the first ``steps`` steps of plain SGD
    with learning rate ``lr``, on a copy of ``model``, drawing the same minibatches (same seed, same
    permutation and augmentation draws) as the engine's run: the probe of the spec's step-size
    matching (§1.6).  ``model`` itself is not changed."""
    import copy

    import torch

    from ..train.augment import random_crop_flip

    probe = copy.deepcopy(model).to(device)
    probe.train()
    opt = torch.optim.SGD(probe.parameters(), lr=lr)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    n = len(next(iter(data.values())))
    perm = torch.randperm(n, generator=gen)
    use_bf16 = device.type == "cuda"
    norms = []
    for s in range(steps):
        idx = _batch_indices(perm, s, batch_size)
        batch = {k: v[idx].to(device) for k, v in data.items()}
        if image_key in batch and (augment_pad or augment_flip):
            batch[image_key] = random_crop_flip(batch[image_key], augment_pad, augment_flip, gen)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
            loss, _ = loss_fn(probe, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        sq = sum(float(p.grad.detach().double().pow(2).sum()) for p in probe.parameters() if p.grad is not None)
        norms.append(sq**0.5)
        opt.step()
    del probe
    return norms


def _optimizer_config(optimizer: str, lr: float, opt_settings: dict, steps: int, probe=None) -> tuple[str, float, dict, float, dict]:
    """(engine optimiser name, effective lr, extra, momentum, info) for one run.

    ``probe()`` returns the SGD probe's gradient norms (called only for SNGD with ``match_sgd``).
    """
    s = dict(opt_settings)
    info: dict = {}
    if optimizer == "sgd":
        return "sgd", lr, {}, float(s.get("momentum", 0.0)), info
    if optimizer == "sngd":
        eta = lr
        if s.get("match_sgd", False):
            norms = probe()
            med = float(np.median(norms))
            eta = lr * med
            info = {"matched_to_sgd_lr": lr, "probe_grad_norms": norms, "probe_median_grad_norm": med}
        return "sngd", eta, {"eps": float(s.get("eps", 1e-8))}, 0.0, info
    if optimizer == "sps":
        return "sps", lr, {"c": float(s.get("c", 0.5)), "f_star": 0.0}, 0.0, info
    if optimizer == "adamw":
        extra = {
            "eps": float(s.get("eps", 1e-8)),
            "weight_decay": float(s.get("weight_decay", 0.0)),
            "max_grad_norm": s.get("clip"),
            "total_steps": steps if s.get("schedule", "constant") == "linear" else None,
        }
        return "adamw_clip", lr, extra, 0.0, info
    raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {DL_OPTIMIZERS}")


def _evaluate(model, data: dict, logits_fn, device, batch_size: int = 256) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` on ``data`` (tensors with ``y``), in batches."""
    import torch

    n = len(data["y"])
    loss_sum, correct = 0.0, 0.0
    use_bf16 = device.type == "cuda"
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
        for i in range(0, n, batch_size):
            batch = {k: v[i : i + batch_size].to(device) for k, v in data.items()}
            logits = logits_fn(model, batch).float()
            loss_sum += float(torch.nn.functional.cross_entropy(logits, batch["y"], reduction="sum"))
            correct += float((logits.argmax(-1) == batch["y"]).sum())
    return loss_sum / n, correct / n


def _drop_checkpoint(checkpoint) -> None:
    """Delete a finished run's resume checkpoint (hundreds of MB for BERT): a killed run resumes from
    it, but a rerun of a finished job (e.g. after a code change) must train afresh, not return the
    stored history of the old code."""
    if checkpoint:
        from pathlib import Path

        Path(checkpoint).unlink(missing_ok=True)


def _curves(history: list[dict], optimizer: str, lr: float, steps_per_row: int, image: bool) -> pd.DataFrame:
    rows = []
    for r in history:
        row = {"optimizer": optimizer, "lr": lr, "step": r["epoch"] * steps_per_row}
        if image:
            row["epoch"] = r["epoch"]
        for k in ("train_loss", "train_acc", "test_loss", "test_acc", "val_loss", "val_acc"):
            row[k] = float(r.get(k, np.nan))
        rows.append(row)
    cols = dict(DL_COLUMNS, **IMAGE_COLUMNS) if image else dict(DL_COLUMNS)
    return pd.DataFrame(rows).reindex(columns=list(cols))


def _run_meta(optimizer, lr, eng_name, eta, extra, momentum, info, history, select_at) -> dict:
    sel = [r for r in history if r.get("_select")]
    return {
        "optimizer": optimizer,
        "grid_value": lr,
        "engine_optimizer": eng_name,
        "effective_lr": eta,
        "optimizer_extra": extra,
        "momentum": momentum,
        "step_size_matching": info or None,
        "select_at": select_at,
        "val_loss_at_select": float(sel[-1]["val_loss"]) if sel else None,
        "val_acc_at_select": float(sel[-1]["val_acc"]) if sel else None,
        "train_seconds": float(sum(r.get("epoch_seconds", 0.0) for r in history)),
    }


def train_text(
    figure: str,
    dataset: str,
    model: str,
    max_length: int,
    batch_size: int,
    steps: int,
    log_every: int,
    eval_every: int,
    select_at: int | None,
    n_train: int | None,
    n_val: int | None,
    n_test: int | None,
    optimizer: str,
    lr: float,
    opt_settings: dict,
    source: str | None = None,
    threshold: float = 0.5,
    full_final_test: bool = False,
    data_seed: int = 0,
    seed: int = 0,
    probe_steps: int = 10,
    ckpt_every: int = 50,
    eval_batch: int = 256,
    trim: bool = True,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
) -> dict:
    """Fine-tune a pretrained BERT-architecture classifier (Figs 1, 4) with one optimiser and one
    grid value; train metrics every ``log_every`` steps, test metrics every ``eval_every`` steps,
    validation metrics at ``select_at`` (None: the last step) and at the end.  A killed run resumes
    from ``checkpoint``, which is deleted once the run has finished.

    Returns {"csv": (curves, meta)}.
    """
    import torch

    from ..data.text import encode, load_text_dataset
    from ..models.sequence import count_parameters, forward_logits, load_classifier, load_tokenizer
    from ..train import TrainConfig, fit, resolve_device

    if steps % log_every or eval_every % log_every:
        raise ValueError("steps and eval_every must be multiples of log_every")
    select_at = steps if select_at is None else int(select_at)
    if select_at % log_every or not 0 < select_at <= steps:
        raise ValueError("select_at must be a multiple of log_every within the run")
    _register_dl_optimizers()
    device = resolve_device(accelerator)
    splits = load_text_dataset(dataset, source, n_train, n_val, n_test, data_seed, threshold, full_final_test)
    tok = load_tokenizer(model)
    train = encode(tok, splits.train, max_length)
    val = encode(tok, splits.val, max_length)
    test = {k: v.to(device) for k, v in encode(tok, splits.test, max_length).items()}
    final = encode(tok, splits.final_test, max_length) if splits.final_test is not None else None
    net = load_classifier(model, splits.num_labels, seed)

    def logits_fn(m, batch):
        return forward_logits(m, batch, trim)

    def loss_fn(m, batch):
        logits = logits_fn(m, batch).float()
        loss = torch.nn.functional.cross_entropy(logits, batch["y"])
        return loss, {"train_acc": (logits.argmax(-1) == batch["y"]).float().mean().detach()}

    def probe():
        return sgd_probe_norms(net, train, loss_fn, batch_size, lr, probe_steps, seed, device)

    eng_name, eta, extra, momentum, info = _optimizer_config(optimizer, lr, opt_settings, steps, probe)

    def on_epoch_end(m, epoch):
        step = epoch * log_every
        row = {}
        if step % eval_every == 0 or step == steps:
            row["test_loss"], row["test_acc"] = _evaluate(m, test, logits_fn, device, eval_batch)
        if step in (select_at, steps):
            row["val_loss"], row["val_acc"] = _evaluate(m, val, logits_fn, device, eval_batch)
            row["_select"] = step == select_at
        if step == steps and final is not None:
            row["final_test_loss"], row["final_test_acc"] = _evaluate(m, final, logits_fn, device, eval_batch)
        return row

    cfg = TrainConfig(
        epochs=steps // log_every, batch_size=batch_size, lr=eta, optimizer=eng_name, momentum=momentum,
        seed=seed, steps_per_epoch=log_every, ckpt_every=max(1, ckpt_every // log_every), extra=extra,
    )  # fmt: skip
    history = fit(net, train, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log, on_epoch_end=on_epoch_end, image_key=None)
    _drop_checkpoint(checkpoint)
    df = _curves(history, optimizer, lr, log_every, image=False)
    meta = _run_meta(optimizer, lr, eng_name, eta, extra, momentum, info, history, select_at)
    last = history[-1]
    meta.update(
        {
            "figure": figure,
            "dataset": splits.name,
            "stand_in": splits.stand_in,
            "label_names": list(splits.label_names),
            "sizes": splits.sizes(),
            "data_info": splits.info,
            "model": model,
            "parameters": count_parameters(net),
            "max_length": max_length,
            "batch_size": batch_size,
            "steps": steps,
            "log_every": log_every,
            "eval_every": eval_every,
            "x_unit": "steps",
            "device": str(device),
            "final_test": {"loss": last.get("final_test_loss"), "acc": last.get("final_test_acc"), "n": splits.sizes().get("final_test")} if final is not None else None,
            "columns": dict(DL_COLUMNS),
        }
    )
    return {"csv": (df, meta)}


def _image_splits(dataset: str, source: str | None, n_val: int, data_seed: int):
    """(train, val, test) image tensors and the normalisation: the offline digits (8×8, stratified
    80/20 split) or CIFAR-10 from the hub; the validation split is held out from train (fixed seed)."""
    import torch

    from ..data.images import CIFAR10_HUB, digits16, load_cifar10

    if dataset == "digits":
        sp = digits16(seed=data_seed, upsample=1)
    elif dataset == "cifar10":
        sp = load_cifar10(source or CIFAR10_HUB)
    else:
        raise ValueError(f"unknown image dataset {dataset!r} (digits | cifar10)")
    n = len(sp.y_train)
    val_idx = torch.from_numpy(np.sort(np.random.default_rng(data_seed).choice(n, size=n_val, replace=False)))
    keep = torch.ones(n, dtype=torch.bool)
    keep[val_idx] = False
    x_tr, y_tr = sp.normalise(sp.x_train[keep]), sp.y_train[keep]
    x_va, y_va = sp.normalise(sp.x_train[val_idx]), sp.y_train[val_idx]
    return sp, {"x": x_tr, "y": y_tr}, {"x": x_va, "y": y_va}, {"x": sp.normalise(sp.x_test), "y": sp.y_test}


def train_image(
    figure: str,
    dataset: str,
    image_size: int,
    patch_size: int,
    hidden: int,
    layers: int,
    heads: int,
    mlp: int,
    dropout: float,
    batch_size: int,
    epochs: int,
    select_at: int | None,
    n_val: int,
    optimizer: str,
    lr: float,
    opt_settings: dict,
    augment_pad: int = 0,
    augment_flip: bool = False,
    source: str | None = None,
    data_seed: int = 0,
    seed: int = 0,
    probe_steps: int = 10,
    compile: bool = False,
    eval_batch: int = 1000,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
) -> dict:
    """Train a randomly initialised ViT (:func:`attnbias.models.vit.build_vit`) from scratch with one
    optimiser and one grid value (the proposal Fig 7); per epoch: train, test and (at ``select_at``
    and the end) validation metrics.  Returns {"csv": (curves, meta)}."""
    import torch

    from ..models.vit import build_vit
    from ..train import TrainConfig, fit, resolve_device

    select_at = epochs if select_at is None else int(select_at)
    if not 0 < select_at <= epochs:
        raise ValueError("select_at must be an epoch within the run")
    _register_dl_optimizers()
    device = resolve_device(accelerator)
    sp, train, val, test = _image_splits(dataset, source, n_val, data_seed)
    channels = sp.x_train.shape[1]
    if sp.x_train.shape[-1] != image_size:
        raise ValueError(f"{dataset} images are {sp.x_train.shape[-1]} pixels wide, not image_size={image_size}")
    net = build_vit(image_size, patch_size, channels, hidden, layers, heads, mlp, int(sp.y_train.max()) + 1, seed)
    if dropout > 0:  # build_vit has no dropout argument: set the probabilities of its modules
        for mod in net.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = dropout
            if hasattr(mod, "attention_dropout"):
                mod.attention_dropout = dropout
    test = {k: v.to(device) for k, v in test.items()}
    steps_per_epoch = max(1, len(train["y"]) // batch_size)

    def logits_fn(m, batch):
        return m(pixel_values=batch["x"]).logits

    def loss_fn(m, batch):
        logits = logits_fn(m, batch).float()
        loss = torch.nn.functional.cross_entropy(logits, batch["y"])
        return loss, {"train_acc": (logits.argmax(-1) == batch["y"]).float().mean().detach()}

    def probe():
        return sgd_probe_norms(net, train, loss_fn, batch_size, lr, probe_steps, seed, device, "x", augment_pad, augment_flip)

    eng_name, eta, extra, momentum, info = _optimizer_config(optimizer, lr, opt_settings, epochs * steps_per_epoch, probe)

    def on_epoch_end(m, epoch):
        row = {}
        row["test_loss"], row["test_acc"] = _evaluate(m, test, logits_fn, device, eval_batch)
        if epoch in (select_at, epochs):
            row["val_loss"], row["val_acc"] = _evaluate(m, val, logits_fn, device, eval_batch)
            row["_select"] = epoch == select_at
        return row

    cfg = TrainConfig(
        epochs=epochs, batch_size=batch_size, lr=eta, optimizer=eng_name, momentum=momentum, seed=seed,
        augment_pad=augment_pad, augment_flip=augment_flip, compile=compile, extra=extra,
    )  # fmt: skip
    history = fit(net, train, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log, on_epoch_end=on_epoch_end, image_key="x")
    _drop_checkpoint(checkpoint)
    df = _curves(history, optimizer, lr, steps_per_epoch, image=True)
    meta = _run_meta(optimizer, lr, eng_name, eta, extra, momentum, info, history, select_at)
    meta.update(
        {
            "figure": figure,
            "dataset": dataset,
            "stand_in": sp.stand_in and "scikit-learn digits 8×8 (10 classes)",
            "sizes": {"train": len(train["y"]), "val": len(val["y"]), "test": len(test["y"])},
            "model": {"image_size": image_size, "patch_size": patch_size, "hidden": hidden, "layers": layers, "heads": heads, "mlp": mlp, "dropout": dropout, "tokens": (image_size // patch_size) ** 2 + 1},
            "parameters": sum(p.numel() for p in net.parameters()),
            "batch_size": batch_size,
            "epochs": epochs,
            "steps_per_epoch": steps_per_epoch,
            "augment": {"pad": augment_pad, "flip": augment_flip},
            "x_unit": "epochs",
            "device": str(device),
            "columns": dict(DL_COLUMNS, **IMAGE_COLUMNS),
        }
    )
    return {"csv": (df, meta)}


# --------------------------------------------------------------------------- gather (Figs 1, 4, 7)


def select_runs(runs: list[tuple[pd.DataFrame, dict]]) -> dict:
    """Per optimiser: the grid value with the lowest validation loss at the selection step.

    Returns {optimizer: {"grid", "val_loss", "chosen", "effective_lr", "at_edge"}}; ``at_edge`` says
    whether the chosen value is the smallest or largest of a grid of two or more values (the spec
    then extends the grid by one factor-3 step in that direction).
    """
    out: dict = {}
    for _, meta in runs:
        o = meta["optimizer"]
        e = out.setdefault(o, {"grid": [], "val_loss": [], "effective_lr": []})
        e["grid"].append(float(meta["grid_value"]))
        v = meta.get("val_loss_at_select")
        e["val_loss"].append(float("nan") if v is None else float(v))
        e["effective_lr"].append(float(meta["effective_lr"]))
    for e in out.values():
        order = np.argsort(e["grid"])
        for k in ("grid", "val_loss", "effective_lr"):
            e[k] = [e[k][i] for i in order]
        vl = np.asarray(e["val_loss"], dtype=float)
        vl = np.where(np.isfinite(vl), vl, np.inf)  # a diverged run is never chosen
        best = int(np.argmin(vl))
        e["chosen"] = e["grid"][best]
        e["chosen_effective_lr"] = e["effective_lr"][best]
        e["at_edge"] = bool(len(e["grid"]) > 1 and best in (0, len(e["grid"]) - 1))
    return out


def gather_dl(figure: str, parts: list[str], preset: str) -> tuple[pd.DataFrame, dict]:
    """The plot-ready table of Figs 1, 4 and 7: every run's curves, flagged ``selected`` for the
    grid value chosen per optimiser on the validation split; the meta records the grids, the
    validation losses, the chosen values, and each selected run's settings."""
    from ..io import load_data

    runs = [load_data(p) for p in parts]
    sel = select_runs(runs)
    frames, per_run = [], {}
    for df, meta in runs:
        o = meta["optimizer"]
        chosen = np.isclose(float(meta["grid_value"]), sel[o]["chosen"])
        frames.append(df.assign(selected=bool(chosen)))
        if chosen:
            per_run[o] = {k: v for k, v in meta.items() if k not in ("columns", "provenance", "settings")}
    df = pd.concat(frames, ignore_index=True)
    order = {o: i for i, o in enumerate(DL_OPTIMIZERS)}
    df = df.sort_values(["optimizer", "lr", "step"], key=lambda s: s.map(order) if s.name == "optimizer" else s, kind="stable").reset_index(drop=True)
    first = runs[0][1]
    columns = dict(first["columns"], **GATHER_COLUMNS)
    common_keys = ("dataset", "stand_in", "label_names", "sizes", "data_info", "model", "parameters", "max_length", "batch_size", "steps", "log_every", "eval_every", "epochs", "steps_per_epoch", "augment", "x_unit", "device", "select_at")
    meta = {k: first[k] for k in common_keys if k in first}
    meta.update({"figure": figure, "preset": preset, "selection": sel, "runs": per_run, "optimizers": [o for o in DL_OPTIMIZERS if o in sel], "columns": columns})
    meta["selection_rule"] = "per optimiser, the grid value with the lowest validation loss at the selection step (never the test set)"
    return df, meta


# --------------------------------------------------------------------------- Fig 6 (proposal): MNIST 0 vs 1

MNIST_HUB = "ylecun/mnist"
FIG6_COLUMNS = {
    "method": "update rule: gd, ngd (normalised by the joint norm of (W, u)) or polyak (PS with L* = 0)",
    "lr": "step size η (the Polyak multiplier for polyak)",
    "t": "iteration (number of full-batch updates done)",
    "loss": "training loss L(W_t, u_t) (logistic)",
    "log10_loss": "log10 L(W_t, u_t), evaluated in log space (no underflow)",
    "train_acc": "training accuracy, sign(Φ(X)) = y",
    "test_acc": "test accuracy, sign(Φ(X)) = y (a prediction Φ = 0 counts as an error)",
    "norm_W": "‖W_t‖_F",
    "norm_u": "‖u_t‖₂",
    "max_attn": "mean over training sequences of max_τ s_τ (1 = the query attends to one token)",
}


def _digit01_images(dataset: str, source: str | None, data_seed: int, test_fraction: float):
    """Images of the digits 0 and 1 scaled to [0, 1] and labels y = +1 (digit 1) / −1 (digit 0):
    the offline scikit-learn digits (8×8, stratified split) or MNIST from the hub (28×28, its own
    train/test splits)."""
    if dataset == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        d = load_digits()
        keep = np.isin(d.target, (0, 1))
        x, t = d.images[keep] / 16.0, d.target[keep]
        tr, te = train_test_split(np.arange(len(t)), test_size=test_fraction, random_state=data_seed, stratify=t)
        return x[tr], 2.0 * t[tr] - 1.0, x[te], 2.0 * t[te] - 1.0, "scikit-learn digits 0 vs 1 (8×8)"
    if dataset == "mnist":
        from ..data.text import load_hub

        ds = load_hub(source or MNIST_HUB, None, "fastrates_download_mnist")
        out = []
        for split in ("train", "test"):
            part = ds[split]
            lab = np.asarray(part["label"])
            idx = np.flatnonzero(np.isin(lab, (0, 1)))
            rows = part.select(idx.tolist())
            x = np.stack([np.asarray(im.convert("L"), dtype=np.float64) / 255.0 for im in rows["image"]])
            out += [x, 2.0 * lab[idx] - 1.0]
        return (*out, None)
    raise ValueError(f"unknown Fig 6 dataset {dataset!r} (digits | mnist)")


def patch_tokens(images: np.ndarray, patch: int, E: np.ndarray, pos: np.ndarray | None = None) -> np.ndarray:
    """Tokens (n, P + 1, d): the non-overlapping patch×patch patches of each image (row-major,
    flattened) mapped by E (patch² × d), plus the position embeddings ``pos`` (P, d) when given,
    preceded by the query token = the mean of the patch embeddings (before positions are added)."""
    n, H, W = images.shape
    if H % patch or W % patch:
        raise ValueError(f"{H}×{W} images do not split into {patch}×{patch} patches")
    p = images.reshape(n, H // patch, patch, W // patch, patch).transpose(0, 1, 3, 2, 4).reshape(n, -1, patch * patch)
    emb = p @ E
    query = emb.mean(axis=1, keepdims=True)
    if pos is not None:
        emb = emb + pos
    return np.concatenate([query, emb], axis=1)


def compute_fig6(
    dataset: str,
    patch: int,
    embed_dim: int,
    lr: float,
    steps: int,
    pos_scale: float = 0.0,
    polyak_lr: float = 1.0,
    polyak_cap: float | None = None,
    per_decade: int = 40,
    proj_seed: int = 0,
    data_seed: int = 0,
    test_fraction: float = 0.2,
    source: str | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Fig 6 (proposal): the paper's model Φ(X) = uᵀXᵀsoftmax(XWx₁) on patch tokens of the digits 0
    and 1, W and u trained jointly from 0 by full-batch GD, NGD (joint norm) and PS (L* = 0), float64,
    with the log-space gradients of :func:`attnbias.models.selfattn.joint_grad_fn` and the runner
    :func:`attnbias.optim.fullbatch.run`.

    ``pos_scale`` > 0 adds fixed Gaussian position embeddings N(0, pos_scale²/d) to the patch tokens
    (drawn after E from the same generator): without them the model sees a bag of patches, which
    cannot separate 0s from 1s drawn with 2×2 patches, so the loss does not approach the L* = 0 that
    the Polyak step assumes.  ``polyak_cap`` caps the Polyak step size (its first steps from
    (W, u) = 0, where the gradient is small, are otherwise huge).
    """
    from ..models.attention import softmax
    from ..models.selfattn import logits as attn_logits

    x_tr, y_tr, x_te, y_te, stand_in = _digit01_images(dataset, source, data_seed, test_fraction)
    rng = np.random.default_rng(proj_seed)
    E = rng.standard_normal((patch * patch, embed_dim)) / patch  # N(0, 1/patch²)
    n_patches = (x_tr.shape[1] // patch) * (x_tr.shape[2] // patch)
    pos = rng.standard_normal((n_patches, embed_dim)) * pos_scale / np.sqrt(embed_dim) if pos_scale > 0 else None
    X, Xte = patch_tokens(x_tr, patch, E, pos)[None], patch_tokens(x_te, patch, E, pos)[None]
    y, yte = y_tr[None], y_te[None]
    d = X.shape[-1]
    params0 = {"W": np.zeros((1, d, d)), "u": np.zeros((1, d))}

    def observe(params, out):
        W, u = params["W"], params["u"]
        s_te = softmax(attn_logits(Xte, W))
        phi_te = np.sum(s_te * np.matmul(Xte, u[..., None, :, None])[..., 0], axis=-1)
        return {
            "log10_loss": out["log_loss"] / LN10,
            "train_acc": np.mean(out["z"] > 0, axis=-1),
            "test_acc": np.mean(yte * phi_te > 0, axis=-1),
            "norm_W": np.linalg.norm(W, axis=(-2, -1)),
            "norm_u": np.linalg.norm(u, axis=-1),
            "max_attn": np.mean(np.exp(np.max(out["log_s"], axis=-1)), axis=-1),
        }

    grad_fn = joint_grad_fn(X, y)
    frames, stopped = [], {}
    for method in METHODS:
        m_lr = polyak_lr if method == "polyak" else lr
        traj = run(grad_fn, params0, steps, method=method, lr=m_lr, normalize="joint", record_at=record_grid(steps, per_decade), observe=observe, loss_star=0.0, polyak_cap=polyak_cap)
        cols = {"method": method, "lr": m_lr, "t": traj["t"], "loss": traj["loss"][:, 0]}
        for k in FIG6_COLUMNS:
            if k not in cols and k in traj:
                cols[k] = traj[k][:, 0]
        frames.append(pd.DataFrame(cols).reindex(columns=list(FIG6_COLUMNS)))
        stopped[method] = int(traj["stopped_at"][0])
    meta = {
        "dataset": dataset,
        "stand_in": stand_in,
        "n_train": int(X.shape[1]),
        "n_test": int(Xte.shape[1]),
        "T": int(X.shape[2]),
        "d": d,
        "patch": patch,
        "embedding": f"fixed Gaussian E ∈ R^({patch * patch}×{embed_dim}), entries N(0, 1/{patch * patch}), seed {proj_seed}",
        "query": "mean of the patch embeddings, prepended",
        "pos_scale": pos_scale,
        "position_embeddings": f"fixed Gaussian N(0, {pos_scale:g}²/{embed_dim}) per patch position (none on the query)" if pos is not None else "none",
        "polyak_cap": polyak_cap,
        "labels": "+1 = digit 1, −1 = digit 0",
        "lr": lr,
        "polyak_lr": polyak_lr,
        "steps": steps,
        "normalize": "joint",
        "loss_star": 0.0,
        "W0": "0",
        "u0": "0",
        "stopped_at": stopped,
        "columns": dict(FIG6_COLUMNS),
    }
    return pd.concat(frames, ignore_index=True), meta


# --------------------------------------------------------------------------- downloads (paper preset)


def fetch_assets(kind: str, names: list[str], config: str | None = None) -> tuple[pd.DataFrame, dict]:
    """Fetch hub datasets (``kind="dataset"``) or models with their tokenizers (``kind="model"``)
    into the Hugging Face cache (download rules of the paper preset); returns a manifest table."""
    rows = []
    if kind == "dataset":
        from ..data.text import load_hub

        for name in names:
            ds = load_hub(name, config, None)
            rows += [{"asset": name, "part": split, "rows": len(ds[split])} for split in ds]
    elif kind == "model":
        from ..models.sequence import load_classifier, load_tokenizer

        for name in names:
            load_tokenizer(name)
            rows.append({"asset": name, "part": "weights", "rows": sum(p.numel() for p in load_classifier(name, 2).parameters())})
    else:
        raise ValueError(f"unknown asset kind {kind!r}")
    cols = {"asset": "hub id", "part": "split (datasets) or weights (models)", "rows": "rows of the split, or parameters of the model with a 2-way head"}
    return pd.DataFrame(rows, columns=list(cols)), {"kind": kind, "config": config, "columns": cols}
