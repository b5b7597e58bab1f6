"""Figure data for Sheen et al. 2024, *Implicit Regularization of Gradient Flow on One-Layer
Softmax Attention* (arXiv 2403.08699).

The paper has no figures; p1–p5 are the project's demonstrations of its theorems (spec
``nucnorm.md`` §3).  Gradient flow is approximated by jointly normalised GD in float64
(:func:`attnbias.optim.fullbatch.run`, ``normalize="joint"``) on the models of
:mod:`attnbias.models.kq`; the SVM targets come from :mod:`attnbias.svm.nuclear`.  Each
``compute_<fig>`` returns a tidy DataFrame and a ``meta`` dict whose ``"columns"`` documents it.
Iterate t is the point after t updates (t = 0 is the initialisation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import nucnorm as dn
from ..metrics.core import cosine
from ..metrics.rank import numerical_rank, singular_values
from ..models import kq
from ..optim.fullbatch import run
from ..svm.nuclear import frobenius_svm, l1_unique, margin, nuclear_svm


def record_points(steps: int, n_records: int, extra=()) -> list[int]:
    """0, ``steps`` and about ``n_records`` log-spaced iterations in between, plus ``extra``."""
    pts = np.unique(np.round(np.geomspace(1, steps, n_records)).astype(int)) if steps > 0 else []
    return sorted({0, steps} | {int(p) for p in pts} | {int(e) for e in extra if 0 <= e <= steps})


def objective_ratio(norm, gam, optimum):
    """R = (‖x‖/γ(x)) / optimum; +inf where the margin γ(x) ≤ 0 (x is then infeasible for every
    rescaling)."""
    norm, gam = np.asarray(norm, dtype=float), np.asarray(gam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gam > 0, norm / np.where(gam > 0, gam, 1.0) / optimum, np.inf)


def _norm_margin_ratio(norm, gam, optimum):
    """γ(x)·optimum/‖x‖ = 1/R, defined for every x ≠ 0 (≤ 0 when the margin is not positive)."""
    norm, gam = np.asarray(norm, dtype=float), np.asarray(gam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, gam * optimum / np.where(norm > 0, norm, 1.0), np.nan)


def _support(b, tol):
    """#{|β_j| > tol·max|β|} along the last axis."""
    b = np.abs(np.asarray(b, dtype=float))
    return np.sum(b > tol * np.max(b, axis=-1, keepdims=True), axis=-1)


def _log10_excess(inst: dn.Instance, W: np.ndarray) -> np.ndarray:
    """log10(𝓛 − 𝓛*) at the matrices W (R, d, d), computed without cancellation."""
    out = kq.forward(inst.X, inst.z, inst.gamma, W)
    return kq.log_excess_risk(out["log_s"], inst.gamma) / np.log(10.0)


def _kq_init(d: int, scale: float, seed: int):
    """K(0), Q(0) ∈ ℝ^{d×d} (m = d) i.i.d. N(0, scale²) from ``default_rng(seed)`` (K first)."""
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((d, d)), scale * rng.standard_normal((d, d))


def _kq_runs(inst, K0, Q0, lr, steps, record_at=None):
    """Separate (K, Q) from (K0, Q0) and merged W from 0, jointly normalised GD."""
    d = inst.X.shape[-1]
    a = run(kq.kq_grad_fn(inst.X, inst.z, inst.gamma), {"K": K0[None], "Q": Q0[None]}, steps, lr=lr, record_at=record_at)
    b = run(kq.merged_grad_fn(inst.X, inst.z, inst.gamma), {"W": np.zeros((1, d, d))}, steps, lr=lr, record_at=record_at)
    return a["params"]["K"][:, 0] @ np.swapaxes(a["params"]["Q"][:, 0], -1, -2), b["params"]["W"][:, 0], a, b


def _premise_full(K0, Q0, lr, steps):
    """Selection premise of p1: after ``steps`` updates both models select every optimal token
    (margin > 0), i.e. the risk is on its way to 𝓛*; the theorems only speak about such runs."""

    def accept(inst, sols):
        if steps <= 0:
            return True, ""
        WK, WM, _, _ = _kq_runs(inst, K0, Q0, lr, steps, record_at=[steps])
        M = inst.features()
        bad = [name for name, W in (("K,Q", WK[-1]), ("merged W", WM[-1])) if margin(M, W) <= 0]
        if bad:
            return False, f"premise: {' and '.join(bad)} still miss an optimal token after {steps} steps (risk not approaching L*)"
        return True, ""

    return accept


P1_COLUMNS = {
    "instance": "instance label (A, B, ...)",
    "model": "kq (K, Q trained separately; W = KQᵀ) or merged (W trained directly from 0)",
    "t": "iteration (number of updates done)",
    "corr_nuc": "corr(W(t), W*_nuc) = ⟨W, W*⟩/(‖W‖_F‖W*‖_F)",
    "corr_frob": "corr(W(t), W*_F)",
    "ratio_nuc": "R_nuc = (‖W‖_*/γ(W))/‖W*_nuc‖_* (inf while the margin γ(W) ≤ 0)",
    "ratio_frob": "R_F = (‖W‖_F/γ(W))/‖W*_F‖_F (inf while γ(W) ≤ 0)",
    "margin": "γ(W) = min_{i,t≠opt_i} (x_opt − x_t)ᵀ W z_i",
    "rank": "numerical rank #{σ_i > rank_tol_trained·σ_1} of W(t)",
    "log10_excess": "log10(𝓛 − 𝓛*), computed without cancellation",
}


def compute_p1(
    instances: list,
    init_scale: float,
    init_seed: int,
    lr: float,
    steps: int,
    check_step: int,
    n_records: int,
    corr_max: float,
    rank_tol_solver: float,
    rank_tol_trained: float,
    premise_steps: int,
    max_tries: int,
    eta_check_lr: float,
    eta_check_steps: int,
    self_attention: bool,
):
    """p1: separate (K, Q) → nuclear-norm SVM, merged W → Frobenius SVM, on each instance.

    ``instances``: list of {name, n, L, d, seed}.  ``eta_check_*``: a second (K, Q) run with step
    ``eta_check_lr`` compared with the main run at the same path length η·t (0 steps: skipped).
    """
    if not 0 < check_step <= steps:
        raise ValueError(f"check_step must lie in [1, steps = {steps}], got {check_step}")
    frames = []
    meta = {"columns": P1_COLUMNS, "instances": [], "check_step": check_step, "lr": lr, "steps": steps,
            "rank_tol_solver": rank_tol_solver, "rank_tol_trained": rank_tol_trained}  # fmt: skip
    for spec in instances:
        name, n, L, d, seed = spec["name"], spec["n"], spec["L"], spec["d"], spec["seed"]
        K0, Q0 = _kq_init(d, init_scale, init_seed)
        inst, sols = dn.select_instance(
            n, L, d, seed, require=("full", "rank_gap"), corr_max=corr_max, rank_tol=rank_tol_solver,
            max_tries=max_tries, self_attention=self_attention, accept=_premise_full(K0, Q0, lr, premise_steps),
        )  # fmt: skip
        Wn, Wf = sols["full"]["low"], sols["full"]["high"]
        M = inst.features()
        matched = int(round(eta_check_steps * eta_check_lr / lr)) if eta_check_steps > 0 else None
        rec = record_points(steps, n_records, extra=[check_step] + ([matched] if matched else []))
        WK, WM, _, _ = _kq_runs(inst, K0, Q0, lr, steps, record_at=rec)
        for model, W in (("kq", WK), ("merged", WM)):
            s = singular_values(W)
            gam = margin(M, W)
            frames.append(
                pd.DataFrame(
                    {
                        "instance": name,
                        "model": model,
                        "t": rec,
                        "corr_nuc": cosine(W.reshape(len(rec), -1), Wn.x.reshape(1, -1), axis=-1),
                        "corr_frob": cosine(W.reshape(len(rec), -1), Wf.x.reshape(1, -1), axis=-1),
                        "ratio_nuc": objective_ratio(s.sum(-1), gam, Wn.norm),
                        "ratio_frob": objective_ratio(np.sqrt(np.sum(s * s, -1)), gam, Wf.norm),
                        "margin": gam,
                        "rank": numerical_rank(s, rank_tol_trained),
                        "log10_excess": _log10_excess(inst, W),
                    }
                )
            )
        ic = rec.index(check_step)
        spectra = {
            "kq": singular_values(WK[ic]),
            "nuc": singular_values(Wn.x),
            "merged": singular_values(WM[ic]),
            "frob": singular_values(Wf.x),
        }
        info = {
            "name": name, "n": n, "L": L, "d": d, "seed": inst.seed, "requested_seed": seed,
            "skipped": inst.meta["skipped"], "loss_star": inst.loss_star,
            "nuc_norm": Wn.norm, "frob_norm": Wf.norm, "corr_svms": float(cosine(Wn.x, Wf.x)),
            "rank_nuc": int(numerical_rank(spectra["nuc"], rank_tol_solver)),
            "rank_frob": int(numerical_rank(spectra["frob"], rank_tol_solver)),
            "spectra_at_check": {k: (v / v[0]).tolist() for k, v in spectra.items()},
            "min_margin_nuc": float(Wn.margins.min()), "min_margin_frob": float(Wf.margins.min()),
        }  # fmt: skip
        if eta_check_steps > 0:
            WE, _, _, _ = _kq_runs(inst, K0, Q0, eta_check_lr, eta_check_steps, record_at=[eta_check_steps])
            WE = WE[-1]
            info["eta_check"] = {
                "lr": eta_check_lr,
                "steps": eta_check_steps,
                "matched_step": matched,
                "corr_paths": float(cosine(WE, WK[rec.index(matched)])),
                "corr_nuc": float(cosine(WE, Wn.x)),
                "ratio_nuc": float(objective_ratio(np.sum(singular_values(WE)), margin(M, WE), Wn.norm)),
            }
        meta["instances"].append(info)
    return pd.concat(frames, ignore_index=True), meta


def _premise_diag(xi0, lr, steps):
    """Selection premise of p2: both diagonal models select every optimal token after ``steps``."""

    def accept(inst, sols):
        if steps <= 0:
            return True, ""
        F, g = kq.diag_features(inst.X, inst.z), inst.gamma
        d = F.shape[-1]
        a = run(kq.diag_grad_fn(F, g), {"xk": np.full((1, d), xi0), "xq": np.zeros((1, d))}, steps, lr=lr, record_at=[steps])
        b = run(kq.beta_grad_fn(F, g), {"beta": np.zeros((1, d))}, steps, lr=lr, record_at=[steps])
        A = inst.diag_features()
        beta_xi = a["params"]["xk"][-1, 0] * a["params"]["xq"][-1, 0]
        bad = [nm for nm, bb in (("(xi_k, xi_q)", beta_xi), ("beta", b["params"]["beta"][-1, 0])) if margin(A, bb) <= 0]
        if bad:
            return False, f"premise: {' and '.join(bad)} still miss an optimal token after {steps} steps (risk not approaching L*)"
        return True, ""

    return accept


P2_COLUMNS = {
    "instance": "index of the instance (0, 1, 2 for the requested seeds in order)",
    "seed": "seed actually used by the instance",
    "model": "xi ((ξ_k, ξ_q) trained, β = ξ_k ⊙ ξ_q) or beta (β trained directly from 0)",
    "t": "iteration",
    "ratio_l1": "R_ℓ1 = (‖β‖₁/γ(β))/‖β*_ℓ1‖₁ (inf while γ ≤ 0)",
    "ratio_l2": "R_ℓ2 = (‖β‖₂/γ(β))/‖β*_ℓ2‖₂ (inf while γ ≤ 0)",
    "corr_l1": "cos(β, β*_ℓ1)",
    "corr_l2": "cos(β, β*_ℓ2)",
    "support": "#{|β_j| > support_tol·max|β|}",
}


def compute_p2(
    n: int,
    L: int,
    d: int,
    seeds: list,
    xi0: float,
    lr: float,
    steps: int,
    check_step: int,
    n_records: int,
    corr_max: float,
    support_tol: float,
    premise_steps: int,
    max_tries: int,
    self_attention: bool,
):
    """p2: the diagonal theorem.  (ξ_k, ξ_q) from (xi0·1, 0) → ℓ1-SVM; β from 0 → ℓ2-SVM.

    Instances are selected one after the other; a seed already used is never reused, so the
    three instances differ.  All instances are trained together (batched).
    """
    if not 0 < check_step <= steps:
        raise ValueError(f"check_step must lie in [1, steps = {steps}], got {check_step}")
    insts, sols, used = [], [], set()
    for seed in seeds:
        inst, so = dn.select_instance(
            n, L, d, seed, require=("diag",), corr_max=corr_max, max_tries=max_tries,
            self_attention=self_attention, accept=_premise_diag(xi0, lr, premise_steps), exclude=used,
        )  # fmt: skip
        used.add(inst.seed)
        insts.append(inst)
        sols.append(so["diag"])
    F = np.stack([kq.diag_features(i.X, i.z) for i in insts])
    G = np.stack([i.gamma for i in insts])
    S = len(insts)
    rec = record_points(steps, n_records, extra=[check_step])
    xi = run(kq.diag_grad_fn(F, G), {"xk": np.full((S, d), xi0), "xq": np.zeros((S, d))}, steps, lr=lr, record_at=rec)
    be = run(kq.beta_grad_fn(F, G), {"beta": np.zeros((S, d))}, steps, lr=lr, record_at=rec)
    paths = {"xi": xi["params"]["xk"] * xi["params"]["xq"], "beta": be["params"]["beta"]}  # (R, S, d)
    frames, meta_inst = [], []
    for j, (inst, so) in enumerate(zip(insts, sols, strict=True)):
        A = inst.diag_features()
        b1, b2 = so["low"], so["high"]
        for model, P in paths.items():
            B = P[:, j]
            gam = margin(A, B)
            frames.append(
                pd.DataFrame(
                    {
                        "instance": j,
                        "seed": inst.seed,
                        "model": model,
                        "t": rec,
                        "ratio_l1": objective_ratio(np.abs(B).sum(-1), gam, b1.norm),
                        "ratio_l2": objective_ratio(np.linalg.norm(B, axis=-1), gam, b2.norm),
                        "corr_l1": cosine(B, b1.x[None], axis=-1),
                        "corr_l2": cosine(B, b2.x[None], axis=-1),
                        "support": _support(B, support_tol),
                    }
                )
            )
        ic = rec.index(check_step)
        meta_inst.append(
            {
                "seed": inst.seed, "requested_seed": inst.meta["requested_seed"], "skipped": inst.meta["skipped"],
                "l1": b1.x.tolist(), "l2": b2.x.tolist(), "l1_norm": b1.norm, "l2_norm": b2.norm,
                "l1_unique": l1_unique(A, b1), "support_l1": int(_support(b1.x, support_tol)),
                "support_l2": int(_support(b2.x, support_tol)),
                "beta_xi_at_check": paths["xi"][ic, j].tolist(), "beta_at_check": paths["beta"][ic, j].tolist(),
            }
        )  # fmt: skip
    meta = {"columns": P2_COLUMNS, "instances": meta_inst, "check_step": check_step, "lr": lr, "steps": steps,
            "xi0": xi0, "support_tol": support_tol, "n": n, "L": L, "d": d}  # fmt: skip
    return pd.concat(frames, ignore_index=True), meta


P3_COLUMNS = {
    "init": "initialisation label",
    "kind": "sign_locked (ξ_k(0) = ξ_q(0)), valid ((α·1, 0)) or random (i.i.d. small)",
    "t": "iteration",
    "ratio_l1": "R_ℓ1 = (‖β‖₁/γ(β))/‖β*_ℓ1‖₁ (inf while γ ≤ 0)",
    "margin_ratio_l1": "γ(β)‖β*_ℓ1‖₁/‖β‖₁ = 1/R_ℓ1 (≤ 0 when β does not select every optimal token)",
    "corr_l1": "cos(β, β*_ℓ1)",
}


def compute_p3(
    n: int,
    L: int,
    d: int,
    seed: int,
    sign_locked_scale: float,
    valid_alphas: list,
    random_scale: float,
    init_seed: int,
    lr: float,
    steps: int,
    n_records: int,
    corr_max: float,
    rank_tol_solver: float,
    max_tries: int,
    self_attention: bool,
):
    """p3: the initialisation condition is necessary (diagonal model on p1's instance B).

    The instance must also have an ℓ1-SVM solution with mixed signs, which a sign-locked run
    (ξ_k(0) = ξ_q(0), hence β = ξ_k² ≥ 0 forever) cannot reach.
    """
    inst, sols = dn.select_instance(
        n, L, d, seed, require=("full", "rank_gap", "diag", "mixed_signs"), corr_max=corr_max,
        rank_tol=rank_tol_solver, max_tries=max_tries, self_attention=self_attention,
    )  # fmt: skip
    b1 = sols["diag"]["low"]
    rng = np.random.default_rng(init_seed)
    labels = [f"sign-locked ξ_k(0) = ξ_q(0) = {sign_locked_scale:g}·1"]
    kinds = ["sign_locked"]
    xk = [np.full(d, sign_locked_scale)]
    xq = [np.full(d, sign_locked_scale)]
    for a in valid_alphas:
        labels.append(f"valid (α·1, 0), α = {a:g}")
        kinds.append("valid")
        xk.append(np.full(d, a))
        xq.append(np.zeros(d))
    labels.append(f"random N(0, {random_scale:g}²)")
    kinds.append("random")
    xk.append(random_scale * rng.standard_normal(d))
    xq.append(random_scale * rng.standard_normal(d))
    F = kq.diag_features(inst.X, inst.z)
    rec = record_points(steps, n_records)
    tr = run(kq.diag_grad_fn(F, inst.gamma), {"xk": np.stack(xk), "xq": np.stack(xq)}, steps, lr=lr, record_at=rec)
    P = tr["params"]["xk"] * tr["params"]["xq"]  # (R, B, d)
    A = inst.diag_features()
    frames = []
    for j, (lab, kind) in enumerate(zip(labels, kinds, strict=True)):
        B = P[:, j]
        gam = margin(A, B)
        l1 = np.abs(B).sum(-1)
        frames.append(
            pd.DataFrame(
                {
                    "init": lab,
                    "kind": kind,
                    "t": rec,
                    "ratio_l1": objective_ratio(l1, gam, b1.norm),
                    "margin_ratio_l1": _norm_margin_ratio(l1, gam, b1.norm),
                    "corr_l1": cosine(B, b1.x[None], axis=-1),
                }
            )
        )
    meta = {
        "columns": P3_COLUMNS,
        "seed": inst.seed,
        "requested_seed": seed,
        "skipped": inst.meta["skipped"],
        "n": n, "L": L, "d": d, "lr": lr, "steps": steps,
        "l1": b1.x.tolist(),
        "l1_norm": b1.norm,
        "final_beta": {lab: P[-1, j].tolist() for j, lab in enumerate(labels)},
    }  # fmt: skip
    return pd.concat(frames, ignore_index=True), meta


def _random_orthogonal(rng, d):
    Qm, Rm = np.linalg.qr(rng.standard_normal((d, d)))
    return Qm * np.sign(np.diag(Rm))[None, :]


def offdiag_mass(A: np.ndarray, R: np.ndarray) -> np.ndarray:
    """‖offdiag(A R)‖_F / ‖A‖_F for A (..., d, d): 0 iff A = diag(σ) Rᵀ (R orthogonal)."""
    B = A @ R
    off = B - np.einsum("...ii->...i", B)[..., :, None] * np.eye(B.shape[-1])
    return np.linalg.norm(off, axis=(-2, -1)) / np.linalg.norm(A, axis=(-2, -1))


P4_COLUMNS = {
    "init": "aligned (K(0) = diag(σ_K)Rᵀ, Q(0) = diag(σ_Q)Rᵀ) or control (i.i.d. Gaussian)",
    "t": "iteration",
    "offdiag_K": "‖offdiag(K(t)R)‖_F/‖K(t)‖_F",
    "offdiag_Q": "‖offdiag(Q(t)R)‖_F/‖Q(t)‖_F",
    "corr_svm": "corr(K(t)Q(t)ᵀ, W*) with W* = W*_nuc = W*_F on this data",
    "ratio_nuc": "R_nuc of K(t)Q(t)ᵀ (inf while γ ≤ 0)",
}


def compute_p4(
    n: int,
    L: int,
    d: int,
    seed: int,
    sigma_low: float,
    sigma_high: float,
    control_scale: float,
    init_seed: int,
    lr: float,
    steps: int,
    n_records: int,
):
    """p4: Lemma 5.1, alignment of K, Q with the data is preserved along the flow.

    Both initialisations are trained together (batch of two).
    """
    inst = dn.aligned_instance(n, L, d, seed)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    W_cf = dn.aligned_closed_form(inst)
    rng = np.random.default_rng(init_seed)
    R = _random_orthogonal(rng, d)
    sK = rng.uniform(sigma_low, sigma_high, d)
    sQ = rng.uniform(sigma_low, sigma_high, d)
    K0 = np.stack([np.diag(sK) @ R.T, control_scale * rng.standard_normal((d, d))])
    Q0 = np.stack([np.diag(sQ) @ R.T, control_scale * rng.standard_normal((d, d))])
    rec = record_points(steps, n_records)
    tr = run(kq.kq_grad_fn(inst.X, inst.z, inst.gamma), {"K": K0, "Q": Q0}, steps, lr=lr, record_at=rec)
    K, Q = tr["params"]["K"], tr["params"]["Q"]  # (R, 2, d, d)
    W = K @ np.swapaxes(Q, -1, -2)
    frames = []
    for j, name in enumerate(("aligned", "control")):
        Wj = W[:, j]
        s = singular_values(Wj)
        frames.append(
            pd.DataFrame(
                {
                    "init": name,
                    "t": rec,
                    "offdiag_K": offdiag_mass(K[:, j], R),
                    "offdiag_Q": offdiag_mass(Q[:, j], R),
                    "corr_svm": cosine(Wj.reshape(len(rec), -1), Wn.x.reshape(1, -1), axis=-1),
                    "ratio_nuc": objective_ratio(s.sum(-1), margin(M, Wj), Wn.norm),
                }
            )
        )
    meta = {
        "columns": P4_COLUMNS,
        "n": n, "L": L, "d": d, "seed": seed, "lr": lr, "steps": steps,
        "svm_nuc_vs_frob_maxabs": float(np.max(np.abs(Wn.x - Wf.x))),
        "svm_nuc_vs_closed_form_maxabs": float(np.max(np.abs(Wn.x - W_cf))),
        "closed_form_diag": np.diag(W_cf).tolist(),
        "conserved_drift": [float(np.linalg.norm(
            (np.swapaxes(K[-1, j], -1, -2) @ K[-1, j] - np.swapaxes(Q[-1, j], -1, -2) @ Q[-1, j])
            - (np.swapaxes(K[0, j], -1, -2) @ K[0, j] - np.swapaxes(Q[0, j], -1, -2) @ Q[0, j]))) for j in range(2)],
    }  # fmt: skip
    return pd.concat(frames, ignore_index=True), meta


P5_COLUMNS = {
    "n": "inputs",
    "L": "tokens per input",
    "d": "dimension",
    "instance": "seed of the instance (seed0 + index; no instance selection)",
    "feasible": "both SVMs solved (the token-separation constraints are feasible)",
    "rank_nuc": "#{σ_i > rank_tol·σ_1} of W*_nuc",
    "rank_frob": "#{σ_i > rank_tol·σ_1} of W*_F",
    "nuc_of_nuc": "‖W*_nuc‖_*",
    "nuc_of_frob": "‖W*_F‖_*",
    "frob_of_nuc": "‖W*_nuc‖_F",
    "frob_of_frob": "‖W*_F‖_F",
    "min_margin_nuc": "min_j ⟨M_j, W*_nuc⟩ (the constraints ask ≥ 1)",
    "min_margin_frob": "min_j ⟨M_j, W*_F⟩",
}


def compute_p5(n_values: list, L_values: list, d_values: list, instances: int, seed0: int, rank_tol: float, self_attention: bool):
    """p5 (convex only): ranks of W*_nuc and W*_F over random instances of every (n, L, d)."""
    rows = []
    for n in n_values:
        for L in L_values:
            for d in d_values:
                for k in range(instances):
                    inst = dn.random_instance(n, L, d, seed0 + k, self_attention)
                    M = inst.features()
                    row = {"n": n, "L": L, "d": d, "instance": seed0 + k, "feasible": False}
                    Wn = nuclear_svm(M, strict=False)
                    Wf = frobenius_svm(M, strict=False) if np.all(np.isfinite(Wn.x)) else None
                    if Wf is not None and np.all(np.isfinite(Wf.x)):
                        sn, sf = singular_values(Wn.x), singular_values(Wf.x)
                        row.update(
                            feasible=True,
                            rank_nuc=int(numerical_rank(sn, rank_tol)),
                            rank_frob=int(numerical_rank(sf, rank_tol)),
                            nuc_of_nuc=float(sn.sum()),
                            nuc_of_frob=float(sf.sum()),
                            frob_of_nuc=float(np.linalg.norm(Wn.x)),
                            frob_of_frob=float(np.linalg.norm(Wf.x)),
                            min_margin_nuc=float(Wn.margins.min()),
                            min_margin_frob=float(Wf.margins.min()),
                        )
                    rows.append(row)
    df = pd.DataFrame(rows, columns=list(P5_COLUMNS))
    meta = {"columns": P5_COLUMNS, "instances": instances, "rank_tol": rank_tol, "seed0": seed0}
    return df, meta
