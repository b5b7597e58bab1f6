"""Synthetic figure data for Tarzanagh et al. 2023 (Figs 1–5, 8 and the Fig 9/10 study).

Each group runs in three stages (rules `instance`, `svm`, `compute`): its problems and SVM
solutions come from :mod:`.problems`, and ``trajectories_<group>(instance, svm, **settings)``
runs the dynamics and returns ``(DataFrame, meta)``; the DataFrame is tidy and plot-ready and
``meta["columns"]`` documents its columns.  ``compute_<group>(**settings)`` runs the three stages
in one call.  All dynamics run in float64 with the scaled,
cancellation-free gradient of :mod:`attnbias.models.attention`, batched over initial points.
Iterate t is the point after t updates (t = 0 is the initial point).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import synthetic as syn
from ...metrics import cosine
from ...models import joint_grad_fn, loss_value, prompt_grad_fn, softmax, token_scores
from ...optim import run
from ...svm import InfeasibleSVM, att_svm, classify_selection, svm_neighbours
from . import problems

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


def _staged(group: str, settings: dict, data=(), svm=True):
    """Run the stages of ``group`` in one call: its instance (from the settings named in
    ``data``), its SVM solutions (none when ``svm`` is false) and its trajectories."""
    inst, _ = getattr(problems, f"instance_{group}")(**{k: settings[k] for k in data})
    sol = getattr(problems, f"svm_{group}")(inst)[0] if svm else None
    return globals()[f"trajectories_{group}"](inst, sol, **settings)


def trajectories_fig1(instance, svm, steps: int, lr: float, inits: list[float]):
    """Figs 1(a)–(c): NGD paths of p on the d = 3 constructions, and their SVM directions."""
    frames, meta = (
        [],
        {"steps": steps, "lr": lr, "method": "ngd", "loss": "logistic", "inits": inits},
    )
    for case, axis in problems._FIG1_CASES.items():
        prob = problems.problem(instance, case)
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


def compute_fig1(steps: int, lr: float, inits: list[float]) -> tuple[pd.DataFrame, dict]:
    """Figs 1(a)–(c), the three stages in one call."""
    return _staged("fig1", dict(steps=steps, lr=lr, inits=inits))


def trajectories_fig2(
    instance, svm, steps: int, lr: float, mu: float, radius: float, inside: list, outside: list
):
    """Fig 2 (project proposal): NGD paths from inside and outside the cone C_{μ,R}(LMM).

    ``inside``/``outside``: lists of [radius, angle in degrees] initial points.
    """
    prob = problems.problem(instance, "fig2")
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


def compute_fig2(steps: int, lr: float, mu: float, radius: float, inside: list, outside: list):
    """Fig 2, the three stages in one call."""
    return _staged("fig2", dict(steps=steps, lr=lr, mu=mu, radius=radius, inside=inside,
                                outside=outside))  # fmt: skip


def trajectories_fig3(instance, svm, steps: int, lr: float, p0: list, v0: list):
    """Fig 3: joint (v, p) NGD (blocks normalised separately), cases (a) and (b)."""
    frames, meta = [], {"steps": steps, "lr": lr, "p0": p0, "v0": v0, "normalize": "block"}
    for case in problems._FIG3_CASES:
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


def compute_fig3(steps: int, lr: float, p0: list, v0: list) -> tuple[pd.DataFrame, dict]:
    """Fig 3, the three stages in one call."""
    return _staged("fig3", dict(steps=steps, lr=lr, p0=p0, v0=v0))


def trajectories_fig4(instance, svm, steps: int, lr_ngd: float, lr_gd: float):
    """Fig 4: NGD vs constant-step GD from p0 = 0 on the Fig 1(c) data (no SVM stage)."""
    prob = problems.problem(instance, "fig1c")
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


def compute_fig4(steps: int, lr_ngd: float, lr_gd: float) -> tuple[pd.DataFrame, dict]:
    """Fig 4, the stages in one call."""
    return _staged("fig4", dict(steps=steps, lr_ngd=lr_ngd, lr_gd=lr_gd), svm=False)


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


def compute_fig5(steps: int, lr: float, C_values: list[float]) -> tuple[pd.DataFrame, dict]:
    """Fig 5, the three stages in one call."""
    return _staged("fig5", dict(steps=steps, lr=lr, C_values=C_values), data=["C_values"])


def trajectories_fig8(instance, svm, steps: int, lr: float, gmm_inits: list, lmm_inits: list):
    """Fig 8 (project construction): two inputs, GD reaches the GMM or an LMM depending on init."""
    prob = problems.problem(instance, "fig8")
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


def compute_fig8(steps: int, lr: float, gmm_inits: list, lmm_inits: list):
    """Fig 8, the three stages in one call."""
    return _staged("fig8", dict(steps=steps, lr=lr, gmm_inits=gmm_inits, lmm_inits=lmm_inits))


def fig9_trials(
    d: int,
    trials: int,
    n: int,
    T: int,
    steps: int,
    lr: float,
    seed: int,
    sat_tol: float,
    nb_tol: float,
    init_scale: float,
) -> pd.DataFrame:
    """One d of the over-parameterisation study: all trials advanced together, then one QP per
    trial."""
    X, Y, v, p0 = syn.random_sphere_trials(d, trials, n, T, seed, init_scale)
    return _fig9_run(d, X, Y, v, p0, steps, lr, sat_tol, nb_tol)


def _fig9_run(d, X, Y, v, p0, steps, lr, sat_tol, nb_tol) -> pd.DataFrame:
    trials = len(X)
    gamma = token_scores(X, Y, v)  # W = I: keys are the tokens
    traj = run(prompt_grad_fn(X, gamma), {"p": p0}, steps, method="ngd", lr=lr, record_at=[steps])
    p = traj["params"]["p"][-1]
    s = softmax(np.einsum("bntd,bd->bnt", X, p))
    alpha = np.argmax(s, axis=-1)
    sat_prob = np.take_along_axis(s, alpha[..., None], axis=-1)[..., 0].mean(axis=-1)
    saturated = sat_prob >= 1.0 - sat_tol
    rows = []
    opt = np.argmax(gamma, axis=-1)
    for b in range(trials):
        row = {
            "d": d,
            "trial": b,
            "sat_prob": sat_prob[b],
            "saturated": bool(saturated[b]),
            "qp_failed": False,
            "lmm": False,
            "gmm": False,
            "selects_opt": bool(np.all(alpha[b] == opt[b])),
            "corr": np.nan,
            "gamma_gap": np.nan,
            "norm": float(np.linalg.norm(p[b])),
        }
        if saturated[b]:
            try:
                pmm = att_svm(X[b], alpha[b]).x
            except InfeasibleSVM:
                row["qp_failed"] = True
            else:
                nb = svm_neighbours(X[b], alpha[b], pmm, tol=nb_tol)
                cls = classify_selection(gamma[b], alpha[b], nb)
                row.update(lmm=cls["lmm"], gmm=cls["gmm"], gamma_gap=cls["gamma_gap"])
                row["corr"] = float(cosine(p[b], pmm))
        rows.append(row)
    return pd.DataFrame(rows)


FIG9_COLUMNS = {
    "d": "dimension",
    "trial": "trial index within d",
    "sat_prob": "(1/n) Σ_i s_{iα_i} at the last iterate, α_i = argmax_t s_it",
    "saturated": "sat_prob ≥ 1 − sat_tol",
    "qp_failed": "ATT-SVM(α) could not be solved (counted as not LMM)",
    "lmm": "saturated and α is locally optimal (an LMM)",
    "gmm": "LMM and α_i = opt_i for every i",
    "selects_opt": "α_i = opt_i for every i",
    "corr": "cos(p, p^mm(α)) for saturated, solved trials",
    "gamma_gap": "min_i min_{t∈T_i} (γ_{iα_i} − γ_it) over SVM-neighbours",
    "norm": "‖p‖ at the last iterate",
}


def trajectories_fig9(
    instance,
    svm,
    d_grid: list[int],
    trials: int,
    n: int,
    T: int,
    steps: int,
    lr: float,
    seed_base: int,
    sat_tol: float,
    nb_tol: float,
    init_scale: float,
):
    """Figs 9–10: the random-trial study over the d grid (seed = seed_base + d; no SVM stage:
    the QPs are those of the selections GD reaches)."""
    frames = [
        _fig9_run(
            d,
            *(np.asarray(instance[f"{k}_d{d}"]) for k in ("X", "Y", "v", "p0")),
            steps,
            lr,
            sat_tol,
            nb_tol,
        )  # fmt: skip
        for d in d_grid
    ]
    meta = {
        "d_grid": d_grid,
        "trials": trials,
        "n": n,
        "T": T,
        "steps": steps,
        "lr": lr,
        "seed_base": seed_base,
        "sat_tol": sat_tol,
        "nb_tol": nb_tol,
        "init_scale": init_scale,
        "columns": FIG9_COLUMNS,
    }
    return pd.concat(frames, ignore_index=True), meta


def compute_fig9(
    d_grid: list[int], trials: int, n: int, T: int, steps: int, lr: float, seed_base: int,
    sat_tol: float, nb_tol: float, init_scale: float,
):  # fmt: skip
    """Figs 9–10, the stages in one call."""
    data = dict(d_grid=d_grid, trials=trials, n=n, T=T, seed_base=seed_base, init_scale=init_scale)
    settings = dict(data, steps=steps, lr=lr, sat_tol=sat_tol, nb_tol=nb_tol)
    return _staged("fig9", settings, data, svm=False)


def risk(prob: syn.TokenProblem, p: np.ndarray, loss: str = "logistic") -> float:
    """L(p) for a fixed-head problem (used in tests and sanity checks)."""
    s = softmax(prob.K @ p)
    return float(np.mean(loss_value(np.sum(s * prob.gamma, axis=-1), loss)))
