"""Synthetic figure data for Tarzanagh et al. 2023: the fixed-head Figs 1, 2, 4, 5 and 8 (Fig 3
is in :mod:`.joint`, the Fig 9/10 study in :mod:`.study`).

Each group runs in three stages (rules `instance`, `svm`, `compute`): ``instance_<group>`` builds
its problems and ``svm_<group>(instance)`` solves their SVMs, each returning ``(arrays, doc)`` for
:func:`attnbias.io.save_arrays`; ``trajectories_<group>(instance, svm, **settings)`` runs the
dynamics and returns ``(DataFrame, meta)``, the DataFrame tidy and plot-ready and
``meta["columns"]`` documenting its columns.  :func:`attnbias.table.stages.run_stages` runs the
stages in one call.  A fixed-head problem is stored as its tokens X, labels Y, W and head v
under a prefix (``"fig1a_X"``, ...) and rebuilt by :func:`problem`, so keys and scores are
recomputed bit for bit.  Fig 4 has no SVM stage (it solves none).  All dynamics run in float64
with the scaled, cancellation-free gradient of :mod:`attnbias.models.attention`, batched over
initial points.  Iterate t is the point after t updates (t = 0 is the initial point).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import synthetic as syn
from ...models import loss_value, prompt_grad_fn, softmax
from ...optim import run
from ...svm import att_svm

PATH_COLUMNS = {
    "case": "figure panel / problem the path belongs to",
    "init": "index of the initial point",
    "t": "iteration (number of updates done)",
    "p1": "first key-space coordinate of p(t)",
    "p2": "second key-space coordinate of p(t)",
    "norm": "‖p(t)‖₂ (full vector)",
}


def _paths(case: str, traj: dict, key_dims=(0, 1)) -> pd.DataFrame:
    P = traj["params"]["p"]  # (R, B, d)
    R, B, _ = P.shape
    t = np.repeat(traj["t"], B)
    init = np.tile(np.arange(B), R)
    flat = P.reshape(R * B, -1)
    return pd.DataFrame(
        {
            "case": case,
            "init": init,
            "t": t,
            "p1": flat[:, key_dims[0]],
            "p2": flat[:, key_dims[1]],
            "norm": np.linalg.norm(flat, axis=1),
        }
    )


def _fixed_head_run(
    prob: syn.TokenProblem,
    p0: np.ndarray,
    steps: int,
    lr: float,
    method="ngd",
    loss="logistic",
    record_at=None,
):
    K = np.broadcast_to(prob.K, (len(p0),) + prob.K.shape)
    return run(
        prompt_grad_fn(K, prob.gamma, loss),
        {"p": p0},
        steps,
        method=method,
        lr=lr,
        record_at=record_at,
    )


def _d3_inits(values, axis: int) -> np.ndarray:
    p0 = np.zeros((len(values), 3))
    p0[:, axis] = values
    return p0


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


def trajectories_fig1(instance, svm, steps: int, lr: float, inits: list[float]):
    """Figs 1(a)–(c): NGD paths of p on the d = 3 constructions, and their SVM directions."""
    frames, meta = (
        [],
        {"steps": steps, "lr": lr, "method": "ngd", "loss": "logistic", "inits": inits},
    )
    for case, axis in _FIG1_CASES.items():
        prob = problem(instance, case)
        traj = _fixed_head_run(prob, _d3_inits(inits, axis), steps, lr)
        frames.append(_paths(case, traj))
        info = {
            "tokens": prob.X[..., :2],
            "scores": prob.gamma,
            "opt": prob.opt,
            "gmm": svm[f"{case}_gmm"],
            "init_axis": "p2" if axis == 1 else "p1",
            "stopped_at": traj["stopped_at"],
        }
        if case == "fig1b":
            info["lmm"] = svm["fig1b_lmm"]  # select the square (1, 0)
        if case == "fig1a":
            info["other"] = svm["fig1a_other"]  # (1, 0): not locally optimal here
        if case == "fig1c":
            info["data_source"] = instance["fig1c_source"]
        meta[case] = info
    meta["columns"] = PATH_COLUMNS
    return pd.concat(frames, ignore_index=True), meta


def trajectories_fig2(
    instance, svm, steps: int, lr: float, mu: float, radius: float, inside: list, outside: list
):
    """Fig 2 (project proposal): NGD paths from inside and outside the cone C_{μ,R}(LMM).

    ``inside``/``outside``: lists of [radius, angle in degrees] initial points.
    """
    prob = problem(instance, "fig2")
    pts = [(r, a, True) for r, a in inside] + [(r, a, False) for r, a in outside]
    p0 = np.zeros((len(pts), 3))
    for j, (r, a, _) in enumerate(pts):
        p0[j, :2] = r * np.cos(np.radians(a)), r * np.sin(np.radians(a))
    traj = _fixed_head_run(prob, p0, steps, lr)
    df = _paths("fig2", traj)
    df["inside"] = np.tile([p[2] for p in pts], len(traj["t"]))
    meta = {
        "steps": steps,
        "lr": lr,
        "mu": mu,
        "radius": radius,
        "starts": [[r, a, ins] for r, a, ins in pts],
        "tokens": prob.X[..., :2],
        "scores": prob.gamma,
        "lmm": svm["lmm"],
        "gmm": svm["gmm"],
        "columns": dict(PATH_COLUMNS, inside="path starts inside C_{μ,R}(LMM)"),
    }
    return df, meta


def trajectories_fig4(instance, svm, steps: int, lr_ngd: float, lr_gd: float):
    """Fig 4: NGD vs constant-step GD from p0 = 0 on the Fig 1(c) data (no SVM stage)."""
    prob = problem(instance, "fig1c")
    frames = []
    for method, lr in (("ngd", lr_ngd), ("gd", lr_gd)):

        def observe(params, out):
            return {"prob": out["s"].max(axis=-1).mean(axis=-1)}

        traj = run(
            prompt_grad_fn(prob.K[None], prob.gamma[None]),
            {"p": np.zeros((1, 3))},
            steps,
            method=method,
            lr=lr,
            observe=observe,
        )
        frames.append(
            pd.DataFrame(
                {
                    "method": method,
                    "lr": lr,
                    "t": traj["t"],
                    "prob": traj["prob"][:, 0],
                    "norm": np.linalg.norm(traj["params"]["p"][:, 0], axis=-1),
                    "loss": traj["loss"][:, 0],
                }
            )
        )
    meta = {
        "steps": steps,
        "columns": {
            "method": "ngd (normalised GD) or gd (constant step)",
            "lr": "step size η",
            "t": "iteration",
            "prob": "(1/n) Σ_i max_t s_it",
            "norm": "‖p(t)‖",
            "loss": "logistic risk L(p(t))",
        },
    }
    return pd.concat(frames, ignore_index=True), meta


def trajectories_fig5(instance, svm, steps: int, lr: float, C_values: list[float]):
    """Fig 5: correlation vs logistic loss, NGD from p0 = 0, batched over C."""
    K, gamma = np.asarray(instance["K"]), np.asarray(instance["gamma"])
    frames = []
    for loss in ("correlation", "logistic"):
        traj = run(
            prompt_grad_fn(K, gamma, loss),
            {"p": np.zeros((len(K), 3))},
            steps,
            method="ngd",
            lr=lr,
        )
        df = _paths(loss, traj).rename(columns={"case": "loss"})
        df["C"] = np.asarray(C_values, dtype=float)[df["init"].to_numpy()]
        frames.append(df.drop(columns="init"))
    K2 = K[0][..., :2]
    meta = {
        "steps": steps,
        "lr": lr,
        "C_values": C_values,
        "gmm": svm["gmm"],
        "tokens": K2,
        "columns": {
            "loss": "correlation (ℓ = −x) or logistic",
            "C": "score of the high-score star token (1, 1)",
            "t": "iteration",
            "p1": "p(t)₁",
            "p2": "p(t)₂ (the transient bias)",
            "norm": "‖p(t)‖",
        },
    }
    return pd.concat(frames, ignore_index=True), meta


def trajectories_fig8(instance, svm, steps: int, lr: float, gmm_inits: list, lmm_inits: list):
    """Fig 8 (project construction): two inputs, GD reaches the GMM or an LMM depending on init."""
    prob = problem(instance, "fig8")
    starts = [(a, "gmm") for a in gmm_inits] + [(a, "lmm") for a in lmm_inits]
    p0 = np.zeros((len(starts), 3))
    p0[:, :2] = [s[0] for s in starts]
    traj = _fixed_head_run(prob, p0, steps, lr)
    df = _paths("fig8", traj)
    df["expected"] = np.tile([s[1] for s in starts], len(traj["t"]))
    K2 = prob.K[..., :2]
    meta = {
        "steps": steps,
        "lr": lr,
        "tokens": K2,
        "scores": prob.gamma,
        "gmm": svm["gmm"],
        "lmm": svm["lmm"],
        "starts": [list(s[0]) for s in starts],
        "columns": dict(
            PATH_COLUMNS, expected="limit the construction predicts for this start (gmm or lmm)"
        ),
    }
    return df, meta


def risk(prob: syn.TokenProblem, p: np.ndarray, loss: str = "logistic") -> float:
    """L(p) for a fixed-head problem (used in tests and sanity checks)."""
    s = softmax(prob.K @ p)
    return float(np.mean(loss_value(np.sum(s * prob.gamma, axis=-1), loss)))
