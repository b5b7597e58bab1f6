"""p1: separately trained (K, Q) → nuclear-norm SVM, merged W → Frobenius SVM (the full model).

Three stages: :func:`instance_p1` selects the instances (SVM checks and the GD premise),
:func:`svm_p1` solves their nuclear-norm and Frobenius SVMs, :func:`trajectories_p1` runs GD and
tabulates; :func:`attnbias.table.stages.run_stages` runs the three in
one call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import nucnorm as dn
from ...metrics.core import cosine
from ...metrics.rank import numerical_rank, singular_values
from ...models import kq
from ...optim.fullbatch import run
from ...svm.nuclear import frobenius_svm, margin, nuclear_svm
from . import problems
from .measures import log10_excess, objective_ratio, record_points, require_check_step


def _kq_init(d: int, scale: float, seed: int):
    """K(0), Q(0) ∈ ℝ^{d×d} (m = d) i.i.d. N(0, scale²) from ``default_rng(seed)`` (K first)."""
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((d, d)), scale * rng.standard_normal((d, d))


def _kq_runs(inst, K0, Q0, lr, steps, record_at=None):
    """Separate (K, Q) from (K0, Q0) and merged W from 0, jointly normalised GD."""
    d = inst.X.shape[-1]
    a = run(
        kq.kq_grad_fn(inst.X, inst.z, inst.gamma),
        {"K": K0[None], "Q": Q0[None]},
        steps,
        lr=lr,
        record_at=record_at,
    )
    b = run(
        kq.merged_grad_fn(inst.X, inst.z, inst.gamma),
        {"W": np.zeros((1, d, d))},
        steps,
        lr=lr,
        record_at=record_at,
    )
    return (
        a["params"]["K"][:, 0] @ np.swapaxes(a["params"]["Q"][:, 0], -1, -2),
        b["params"]["W"][:, 0],
        a,
        b,
    )


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
            return (
                False,
                f"premise: {' and '.join(bad)} still miss an optimal token after {steps} steps "
                "(risk not approaching L*)",
            )
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


def _prefix(j: int) -> str:
    """The prefix of the j-th instance's arrays in the stage files."""
    return f"i{j}_"


def instance_p1(
    instances: list,
    init_scale: float,
    init_seed: int,
    lr: float,
    premise_steps: int,
    corr_max: float,
    rank_tol_solver: float,
    max_tries: int,
    self_attention: bool,
):
    """p1: the instances, each the first seed from its requested one that passes the selection
    (:func:`attnbias.data.nucnorm.select_instance`: both SVMs feasible, corr(W*_nuc, W*_F) ≤
    corr_max, a rank gap, and the GD premise of :func:`_premise_full`).

    The premise runs GD from K(0), Q(0) at step ``lr``, so ``init_scale``, ``init_seed`` and
    ``lr`` are settings of this stage too: changing one may change which instances are chosen.
    Stored per instance (prefix ``i<index>_``) with the selection's record.
    """
    arrays = {}
    for j, spec in enumerate(instances):
        n, L, d, seed = spec["n"], spec["L"], spec["d"], spec["seed"]
        K0, Q0 = _kq_init(d, init_scale, init_seed)
        inst, _ = dn.select_instance(
            n,
            L,
            d,
            seed,
            require=("full", "rank_gap"),
            corr_max=corr_max,
            rank_tol=rank_tol_solver,
            max_tries=max_tries,
            self_attention=self_attention,
            accept=_premise_full(K0, Q0, lr, premise_steps),
        )
        arrays.update(problems.store_selected(_prefix(j), inst))
    return arrays, problems.SELECTED_DOC


def svm_p1(instance):
    """p1: W*_nuc and W*_F of every stored instance (the selection guarantees both exist)."""
    out = {}
    for prefix in sorted(k[: -len("X")] for k in instance if k.endswith("_X")):
        M = problems.instance_of(instance, prefix).features()
        out.update(problems.store_svm(prefix, nuc=nuclear_svm(M), frob=frobenius_svm(M)))
    return out, problems.NORMSVM_DOC


def trajectories_p1(
    instance,
    svm,
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
    ``instance``, ``svm``: the stages :func:`instance_p1`, :func:`svm_p1`.
    """
    require_check_step(check_step, steps)
    frames = []
    meta = {
        "columns": P1_COLUMNS,
        "instances": [],
        "check_step": check_step,
        "lr": lr,
        "steps": steps,
        "rank_tol_solver": rank_tol_solver,
        "rank_tol_trained": rank_tol_trained,
    }
    for j, spec in enumerate(instances):
        name, n, L, d = spec["name"], spec["n"], spec["L"], spec["d"]
        prefix = _prefix(j)
        inst = problems.selected_of(instance, prefix)
        Wn, Wf = (problems.svm_of(svm, prefix, k) for k in ("nuc", "frob"))
        K0, Q0 = _kq_init(d, init_scale, init_seed)
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
                        "log10_excess": log10_excess(inst, W),
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
            "name": name,
            "n": n,
            "L": L,
            "d": d,
            "seed": inst.seed,
            "requested_seed": inst.meta["requested_seed"],
            "skipped": inst.meta["skipped"],
            "loss_star": inst.loss_star,
            "nuc_norm": Wn.norm,
            "frob_norm": Wf.norm,
            "corr_svms": float(cosine(Wn.x, Wf.x)),
            "rank_nuc": int(numerical_rank(spectra["nuc"], rank_tol_solver)),
            "rank_frob": int(numerical_rank(spectra["frob"], rank_tol_solver)),
            "spectra_at_check": {k: (v / v[0]).tolist() for k, v in spectra.items()},
            "min_margin_nuc": float(Wn.margins.min()),
            "min_margin_frob": float(Wf.margins.min()),
        }
        if eta_check_steps > 0:
            WE, _, _, _ = _kq_runs(
                inst, K0, Q0, eta_check_lr, eta_check_steps, record_at=[eta_check_steps]
            )
            WE = WE[-1]
            info["eta_check"] = {
                "lr": eta_check_lr,
                "steps": eta_check_steps,
                "matched_step": matched,
                "corr_paths": float(cosine(WE, WK[rec.index(matched)])),
                "corr_nuc": float(cosine(WE, Wn.x)),
                "ratio_nuc": float(
                    objective_ratio(np.sum(singular_values(WE)), margin(M, WE), Wn.norm)
                ),
            }
        meta["instances"].append(info)
    return pd.concat(frames, ignore_index=True), meta


