"""p5 (convex only): ranks of the nuclear-norm and Frobenius SVM solutions on random instances."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...metrics.rank import numerical_rank, singular_values
from . import problems

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


def trajectories_p5(
    instance,
    svm,
    n_values: list,
    L_values: list,
    d_values: list,
    instances: int,
    seed0: int,
    rank_tol: float,
    self_attention: bool,
):
    """p5 (convex only): ranks of W*_nuc and W*_F over random instances of every (n, L, d).

    ``instance``, ``svm``: the stages of :mod:`.problems` (the instances; their SVM solutions).
    There are no dynamics: this stage tabulates the solutions.
    """
    rows = []
    for n, L, d, s in problems.p5_keys(n_values, L_values, d_values, instances, seed0):
        prefix = problems.p5_prefix(n, L, d, s)
        row = {"n": n, "L": L, "d": d, "instance": s, "feasible": False}
        Wn, Wf = (problems.solution(svm, prefix, k) for k in ("nuc", "frob"))
        if Wf is not None and np.all(np.isfinite(Wf[0])):
            sn, sf = singular_values(Wn[0]), singular_values(Wf[0])
            row.update(
                feasible=True,
                rank_nuc=int(numerical_rank(sn, rank_tol)),
                rank_frob=int(numerical_rank(sf, rank_tol)),
                nuc_of_nuc=float(sn.sum()),
                nuc_of_frob=float(sf.sum()),
                frob_of_nuc=float(np.linalg.norm(Wn[0])),
                frob_of_frob=float(np.linalg.norm(Wf[0])),
                min_margin_nuc=float(Wn[2].min()),
                min_margin_frob=float(Wf[2].min()),
            )
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(P5_COLUMNS))
    meta = {"columns": P5_COLUMNS, "instances": instances, "rank_tol": rank_tol, "seed0": seed0}
    return df, meta


