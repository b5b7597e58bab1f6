"""p2 and p3: the diagonal model β = ξ_k ⊙ ξ_q (ℓ1-SVM bias) against β trained directly (ℓ2-SVM),
and the necessity of the initialisation condition.

Each in three stages: ``instance_<fig>`` selects the instances (SVM checks; p2 also the GD premise
of :func:`_premise_diag`), ``svm_<fig>`` solves the SVMs the trajectories compare with (p2: ℓ1 and
ℓ2; p3: ℓ1), ``trajectories_<fig>`` runs GD and tabulates;
:func:`attnbias.table.stages.run_stages` runs the three in one call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import nucnorm as dn
from ...metrics.core import cosine
from ...models import kq
from ...optim.fullbatch import run
from ...svm.nuclear import l1_svm, l1_unique, l2_svm, margin
from . import problems
from .measures import (
    norm_margin_ratio,
    objective_ratio,
    record_points,
    require_check_step,
    support_size,
)


def _premise_diag(xi0, lr, steps):
    """Selection premise of p2: both diagonal models select every optimal token after ``steps``."""

    def accept(inst, sols):
        if steps <= 0:
            return True, ""
        F, g = kq.diag_features(inst.X, inst.z), inst.gamma
        d = F.shape[-1]
        a = run(
            kq.diag_grad_fn(F, g),
            {"xk": np.full((1, d), xi0), "xq": np.zeros((1, d))},
            steps,
            lr=lr,
            record_at=[steps],
        )
        b = run(kq.beta_grad_fn(F, g), {"beta": np.zeros((1, d))}, steps, lr=lr, record_at=[steps])
        A = inst.diag_features()
        beta_xi = a["params"]["xk"][-1, 0] * a["params"]["xq"][-1, 0]
        bad = [
            nm
            for nm, bb in (("(xi_k, xi_q)", beta_xi), ("beta", b["params"]["beta"][-1, 0]))
            if margin(A, bb) <= 0
        ]
        if bad:
            return (
                False,
                f"premise: {' and '.join(bad)} still miss an optimal token after {steps} steps "
                "(risk not approaching L*)",
            )
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


def _p2_prefix(j: int) -> str:
    """The prefix of the j-th p2 instance's arrays in the stage files."""
    return f"s{j}_"


def instance_p2(
    n: int,
    L: int,
    d: int,
    seeds: list,
    xi0: float,
    lr: float,
    premise_steps: int,
    corr_max: float,
    max_tries: int,
    self_attention: bool,
):
    """p2: one instance per requested seed, selected one after the other (a seed already used is
    never reused, so they differ): ℓ1 and ℓ2 SVMs feasible, cos(β*_ℓ1, β*_ℓ2) ≤ corr_max, and the
    GD premise of :func:`_premise_diag`.

    The premise runs GD from (xi0·1, 0) at step ``lr``, so ``xi0`` and ``lr`` are settings of this
    stage too: changing one may change which instances are chosen.  Stored per instance (prefix
    ``s<index>_``) with the selection's record.
    """
    arrays, used = {}, set()
    for j, seed in enumerate(seeds):
        inst, _ = dn.select_instance(
            n,
            L,
            d,
            seed,
            require=("diag",),
            corr_max=corr_max,
            max_tries=max_tries,
            self_attention=self_attention,
            accept=_premise_diag(xi0, lr, premise_steps),
            exclude=used,
        )
        used.add(inst.seed)
        arrays.update(problems.store_selected(_p2_prefix(j), inst))
    return arrays, problems.SELECTED_DOC


def svm_p2(instance):
    """p2: β*_ℓ1 and β*_ℓ2 of every stored instance (the selection guarantees both exist)."""
    out = {}
    for prefix in sorted(k[: -len("X")] for k in instance if k.endswith("_X")):
        A = problems.instance_of(instance, prefix).diag_features()
        out.update(problems.store_svm(prefix, l1=l1_svm(A), l2=l2_svm(A)))
    return out, problems.NORMSVM_DOC


def trajectories_p2(
    instance,
    svm,
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

    All instances are trained together (batched).  ``instance``, ``svm``: the stages
    :func:`instance_p2`, :func:`svm_p2`.
    """
    require_check_step(check_step, steps)
    insts = [problems.selected_of(instance, _p2_prefix(j)) for j in range(len(seeds))]
    sols = [
        {k: problems.svm_of(svm, _p2_prefix(j), k) for k in ("l1", "l2")} for j in range(len(seeds))
    ]
    F = np.stack([kq.diag_features(i.X, i.z) for i in insts])
    G = np.stack([i.gamma for i in insts])
    S = len(insts)
    rec = record_points(steps, n_records, extra=[check_step])
    xi = run(
        kq.diag_grad_fn(F, G),
        {"xk": np.full((S, d), xi0), "xq": np.zeros((S, d))},
        steps,
        lr=lr,
        record_at=rec,
    )
    be = run(kq.beta_grad_fn(F, G), {"beta": np.zeros((S, d))}, steps, lr=lr, record_at=rec)
    paths = {
        "xi": xi["params"]["xk"] * xi["params"]["xq"],
        "beta": be["params"]["beta"],
    }  # (R, S, d)
    frames, meta_inst = [], []
    for j, (inst, so) in enumerate(zip(insts, sols, strict=True)):
        A = inst.diag_features()
        b1, b2 = so["l1"], so["l2"]
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
                        "support": support_size(B, support_tol),
                    }
                )
            )
        ic = rec.index(check_step)
        meta_inst.append(
            {
                "seed": inst.seed,
                "requested_seed": inst.meta["requested_seed"],
                "skipped": inst.meta["skipped"],
                "l1": b1.x.tolist(),
                "l2": b2.x.tolist(),
                "l1_norm": b1.norm,
                "l2_norm": b2.norm,
                "l1_unique": l1_unique(A, b1),
                "support_l1": int(support_size(b1.x, support_tol)),
                "support_l2": int(support_size(b2.x, support_tol)),
                "beta_xi_at_check": paths["xi"][ic, j].tolist(),
                "beta_at_check": paths["beta"][ic, j].tolist(),
            }
        )
    meta = {
        "columns": P2_COLUMNS,
        "instances": meta_inst,
        "check_step": check_step,
        "lr": lr,
        "steps": steps,
        "xi0": xi0,
        "support_tol": support_tol,
        "n": n,
        "L": L,
        "d": d,
    }
    return pd.concat(frames, ignore_index=True), meta


P3_COLUMNS = {
    "init": "initialisation label",
    "kind": "sign_locked (ξ_k(0) = ξ_q(0)), valid ((α·1, 0)) or random (i.i.d. small)",
    "t": "iteration",
    "ratio_l1": "R_ℓ1 = (‖β‖₁/γ(β))/‖β*_ℓ1‖₁ (inf while γ ≤ 0)",
    "margin_ratio_l1": (
        "γ(β)‖β*_ℓ1‖₁/‖β‖₁ = 1/R_ℓ1 (≤ 0 when β does not select every optimal token)"
    ),
    "corr_l1": "cos(β, β*_ℓ1)",
}


def instance_p3(
    n: int,
    L: int,
    d: int,
    seed: int,
    corr_max: float,
    rank_tol_solver: float,
    max_tries: int,
    self_attention: bool,
):
    """p3: p1's instance B, the first seed from ``seed`` whose nuclear/Frobenius and ℓ1/ℓ2 SVM
    pairs are feasible and differ (corr ≤ corr_max), with a rank gap and an ℓ1-SVM solution of
    mixed signs, which a sign-locked run (ξ_k(0) = ξ_q(0), hence β = ξ_k² ≥ 0 forever) cannot
    reach.  No GD premise.  Stored with the selection's record.
    """
    inst, _ = dn.select_instance(
        n,
        L,
        d,
        seed,
        require=("full", "rank_gap", "diag", "mixed_signs"),
        corr_max=corr_max,
        rank_tol=rank_tol_solver,
        max_tries=max_tries,
        self_attention=self_attention,
    )
    return problems.store_selected("", inst), problems.SELECTED_DOC


def svm_p3(instance):
    """p3: β*_ℓ1 of the stored instance, the target the trajectories compare with."""
    A = problems.instance_of(instance).diag_features()
    return problems.store_svm("", l1=l1_svm(A)), problems.NORMSVM_DOC


def trajectories_p3(
    instance,
    svm,
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
    """p3: the initialisation condition is necessary (diagonal model on p1's instance B): a
    sign-locked start, valid starts (α·1, 0) and a random start, trained together.

    ``instance``, ``svm``: the stages :func:`instance_p3`, :func:`svm_p3`.
    """
    inst = problems.selected_of(instance)
    b1 = problems.svm_of(svm, "", "l1")
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
    tr = run(
        kq.diag_grad_fn(F, inst.gamma),
        {"xk": np.stack(xk), "xq": np.stack(xq)},
        steps,
        lr=lr,
        record_at=rec,
    )
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
                    "margin_ratio_l1": norm_margin_ratio(l1, gam, b1.norm),
                    "corr_l1": cosine(B, b1.x[None], axis=-1),
                }
            )
        )
    meta = {
        "columns": P3_COLUMNS,
        "seed": inst.seed,
        "requested_seed": inst.meta["requested_seed"],
        "skipped": inst.meta["skipped"],
        "n": n,
        "L": L,
        "d": d,
        "lr": lr,
        "steps": steps,
        "l1": b1.x.tolist(),
        "l1_norm": b1.norm,
        "final_beta": {lab: P[-1, j].tolist() for j, lab in enumerate(labels)},
    }
    return pd.concat(frames, ignore_index=True), meta


