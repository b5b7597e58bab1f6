"""The data and SVM stages of the synthetic maxmargin groups (rules `instance` and `svm`).

``instance_<group>(**data settings)`` builds a group's problems and ``svm_<group>(instance,
**svm settings)`` solves their max-margin SVMs; each returns ``(arrays, doc)`` for
:func:`attnbias.io.save_arrays`.  The trajectories (``trajectories_<group>`` in
:mod:`.synthetic`) read both.  A fixed-head problem is stored as its tokens X, labels Y, W and
head v under a prefix (``"fig1a_X"``, ...) and rebuilt by :func:`problem`, so keys and scores are
recomputed bit for bit.  Figs 4 and 9 have no SVM stage: Fig 4 solves none, and the Fig 9 SVMs
are those of the selections GD reaches.
"""

from __future__ import annotations

import numpy as np

from ...data import synthetic as syn
from ...models import keys
from ...svm import att_svm, head_svm, support_inputs

_PROBLEM_DOC = {
    "*_X": "tokens X (n, T, d) of the problem named by the prefix",
    "*_Y": "labels Y (n,)",
    "*_W": "key-query matrix W (d, d)",
    "*_v": "fixed head v (d,)",
}
_FIG1_CASES = {"fig1a": 1, "fig1b": 1, "fig1c": 0}  # case -> the axis of its initial points


def _store(prefix: str, prob: syn.TokenProblem) -> dict:
    return {f"{prefix}_{k}": getattr(prob, k) for k in "XYWv"}


def problem(instance: dict, prefix: str, **meta) -> syn.TokenProblem:
    """The fixed-head problem stored under ``prefix`` in a loaded instance."""
    return syn.TokenProblem(*(np.asarray(instance[f"{prefix}_{k}"]) for k in "XYWv"), meta=meta)


def _key2(prob: syn.TokenProblem) -> np.ndarray:
    return prob.K[..., :2]


def instance_fig1():
    """Figs 1(a)–(c): the three d = 3 constructions (no settings: they are fixed)."""
    probs = {
        "fig1a": syn.fig1_single_input(local=False),
        "fig1b": syn.fig1_single_input(local=True),
        "fig1c": syn.fig1c_problem(),
    }
    arrays = {k: v for case, prob in probs.items() for k, v in _store(case, prob).items()}
    arrays["fig1c_source"] = probs["fig1c"].meta["source"]
    return arrays, dict(_PROBLEM_DOC, fig1c_source="where the Fig 1(c) key coordinates come from")


def svm_fig1(instance):
    """The GMM direction of each Fig 1 case, the LMM of (b) and the non-optimal (1, 0) of (a)."""
    out = {}
    for case in _FIG1_CASES:
        prob = problem(instance, case)
        out[f"{case}_gmm"] = att_svm(_key2(prob), prob.opt).x
    out["fig1b_lmm"] = att_svm(_key2(problem(instance, "fig1b")), [1]).x  # the square (1, 0)
    out["fig1a_other"] = att_svm(_key2(problem(instance, "fig1a")), [1]).x  # not locally optimal
    doc = {
        "*_gmm": "ATT-SVM solution selecting the optimal tokens (key coordinates 1, 2)",
        "fig1b_lmm": "ATT-SVM solution selecting the square (1, 0) of Fig 1(b) (an LMM)",
        "fig1a_other": "ATT-SVM solution selecting (1, 0) in Fig 1(a) (not locally optimal)",
    }
    return out, doc


def instance_fig2():
    """Fig 2: the project's cone construction."""
    return _store("fig2", syn.fig2_problem()), dict(_PROBLEM_DOC)


def svm_fig2(instance):
    """Fig 2: the LMM (token 1) and GMM (token 0) directions."""
    K2 = _key2(problem(instance, "fig2"))
    doc = {"lmm": "ATT-SVM selecting token 1 (the LMM)", "gmm": "ATT-SVM selecting token 0"}
    return {"lmm": att_svm(K2, [1]).x, "gmm": att_svm(K2, [0]).x}, doc


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


def instance_fig4():
    """Fig 4: the Fig 1(c) data."""
    return _store("fig1c", syn.fig1c_problem()), dict(_PROBLEM_DOC)


def instance_fig5(C_values):
    """Fig 5: one problem per score C of the high-score star token."""
    probs = [syn.fig5_problem(C) for C in C_values]
    arrays = {"K": np.stack([p.K for p in probs]), "gamma": np.stack([p.gamma for p in probs])}
    doc = {"K": "keys (len(C_values), n, T, 3), one problem per C", "gamma": "scores γ (C, n, T)"}
    return arrays, doc


def svm_fig5(instance):
    """Fig 5: the GMM direction (selecting (1, 1) and (1, −1); the same for every C)."""
    gmm = att_svm(np.asarray(instance["K"])[0][..., :2], [1, 1]).x
    return {"gmm": gmm}, {"gmm": "ATT-SVM selecting token 1 of both inputs"}


def instance_fig8():
    """Fig 8: the project's two-input construction."""
    return _store("fig8", syn.fig8_problem()), dict(_PROBLEM_DOC)


def svm_fig8(instance):
    """Fig 8: the GMM (tokens 0, 0) and LMM (tokens 0, 1) directions."""
    K2 = _key2(problem(instance, "fig8"))
    doc = {"gmm": "ATT-SVM selecting tokens (0, 0)", "lmm": "ATT-SVM selecting tokens (0, 1)"}
    return {"gmm": att_svm(K2, [0, 0]).x, "lmm": att_svm(K2, [0, 1]).x}, doc


def instance_fig9(d_grid, trials, n, T, seed_base, init_scale):
    """Figs 9–10: the random trials of every d (seed = seed_base + d; the initial points are drawn
    with the data, from the same generator)."""
    arrays = {}
    for d in d_grid:
        X, Y, v, p0 = syn.random_sphere_trials(d, trials, n, T, seed_base + d, init_scale)
        arrays.update({f"X_d{d}": X, f"Y_d{d}": Y, f"v_d{d}": v, f"p0_d{d}": p0})
    doc = {
        "X_d*": "tokens (trials, n, T, d) of dimension d",
        "Y_d*": "labels (trials, n)",
        "v_d*": "heads (trials, d)",
        "p0_d*": "initial points (trials, d)",
    }
    return arrays, doc
