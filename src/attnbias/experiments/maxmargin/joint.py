"""Fig 3 of Tarzanagh et al. 2023: joint (v, p) NGD on the two three-input problems.

Three stages (rules `instance`, `svm`, `compute`): ``instance_fig3`` (the tokens and labels of
cases (a) and (b)), ``svm_fig3`` (the head SVM v_mm, its support inputs, the ATT-SVM and relaxed
ATT-SVM directions) and ``trajectories_fig3``; :func:`~attnbias.table.stages.run_stages` runs the
three in one call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import synthetic as syn
from ...models import joint_grad_fn, keys, token_scores
from ...optim import run
from ...svm import att_svm, head_svm, support_inputs

_FIG3_CASES = {"fig3a": False, "fig3b": True}  # case -> relaxed


def instance_fig3():
    """Fig 3: the joint (v, p) problems of cases (a) and (b)."""
    arrays = {}
    for case, relaxed in _FIG3_CASES.items():
        arrays[f"{case}_X"], arrays[f"{case}_Y"] = syn.fig3_joint_problem(relaxed)
    return arrays, {"*_X": "tokens X (3, 2, 2) of the case", "*_Y": "labels Y (3,)"}


def svm_fig3(instance):
    """Fig 3: per case the head SVM v_mm on the star tokens (α = 1), its support inputs, and the
    ATT-SVM and relaxed ATT-SVM directions (W = I)."""
    out = {}
    alpha = np.ones(3, dtype=int)
    for case in _FIG3_CASES:
        X, Y = np.asarray(instance[f"{case}_X"]), np.asarray(instance[f"{case}_Y"])
        R = X[np.arange(3), alpha]
        vmm = head_svm(R, Y).x
        support = support_inputs(R, Y, vmm)
        out[f"{case}_v_mm"], out[f"{case}_support"] = vmm, support
        K = keys(X, np.eye(2))
        out[f"{case}_p_mm"] = att_svm(K, alpha).x
        out[f"{case}_p_relax"] = att_svm(K, alpha, support=support).x
    doc = {
        "*_v_mm": "head SVM solution on the selected (star) tokens",
        "*_support": "the support inputs of v_mm",
        "*_p_mm": "ATT-SVM solution selecting the star tokens",
        "*_p_relax": "relaxed ATT-SVM solution (constraints on the support inputs only)",
    }
    return out, doc


def trajectories_fig3(instance, svm, steps: int, lr: float, p0: list, v0: list):
    """Fig 3: joint (v, p) NGD (blocks normalised separately), cases (a) and (b)."""
    frames, meta = [], {"steps": steps, "lr": lr, "p0": p0, "v0": v0, "normalize": "block"}
    for case in _FIG3_CASES:
        X, Y = np.asarray(instance[f"{case}_X"]), np.asarray(instance[f"{case}_Y"])
        W = np.eye(2)
        alpha = np.ones(3, dtype=int)
        params0 = {"v": np.array([v0], dtype=float), "p": np.array([p0], dtype=float)}

        def observe(params, out, X=X, Y=Y):
            s = out["s"]  # (1, n, T)
            f = np.einsum("bnt,bnt->bn", s, token_scores(X[None], Y[None], params["v"])) * 1.0
            return {
                "softmax_prob": s[..., 1].mean(axis=-1),
                "logistic_prob": np.mean(1.0 / (1.0 + np.exp(-f)), axis=-1),
            }

        traj = run(
            joint_grad_fn(X[None], Y[None], W),
            params0,
            steps,
            method="ngd",
            lr=lr,
            normalize="block",
            observe=observe,
        )
        P, V = traj["params"]["p"][:, 0], traj["params"]["v"][:, 0]
        frames.append(
            pd.DataFrame(
                {
                    "case": case,
                    "t": traj["t"],
                    "p1": P[:, 0],
                    "p2": P[:, 1],
                    "v1": V[:, 0],
                    "v2": V[:, 1],
                    "softmax_prob": traj["softmax_prob"][:, 0],
                    "logistic_prob": traj["logistic_prob"][:, 0],
                }
            )
        )
        info = {"tokens": X, "labels": Y, "alpha": alpha}
        for k in ("v_mm", "support", "p_mm", "p_relax"):
            info[k] = svm[f"{case}_{k}"]
        meta[case] = info
    meta["columns"] = {
        "case": "fig3a (all selected tokens are support vectors) or fig3b (yellow is not)",
        "t": "iteration",
        "p1": "p(t)₁",
        "p2": "p(t)₂",
        "v1": "v(t)₁",
        "v2": "v(t)₂",
        "softmax_prob": "(1/n) Σ_i s_{iα_i}(t), α_i the star token",
        "logistic_prob": "(1/n) Σ_i 1/(1 + exp(−Y_i f(X_i)))",
    }
    return pd.concat(frames, ignore_index=True), meta


