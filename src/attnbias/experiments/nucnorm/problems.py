"""The data and SVM stages of the nucnorm groups (rules `instance` and `svm`), and how their
products are stored.

``instance_<fig>(**data settings)`` draws (or selects) the instances, ``svm_<fig>(instance)``
solves their SVMs; each returns ``(arrays, doc)`` for :func:`attnbias.io.save_arrays`, read by
``trajectories_<fig>``.  An instance is stored as its X, y, z, v and seed under a prefix and
rebuilt by :func:`instance_of`.  Here: p4 and p5 (read by :mod:`.alignment`, :mod:`.convex`).
p1–p3 select their instances with SVM checks (p1, p2 also with a GD premise), so their stages
live next to that premise (:mod:`.full`, :mod:`.diagonal`) and store through
:func:`store_selected` (the instance and the selection's record: requested seed, skipped seeds
and why) and :func:`store_svm` (whole :class:`~attnbias.svm.nuclear.NormSVM` solutions,
multipliers included).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from ...data import nucnorm as dn
from ...svm.nuclear import NormSVM, frobenius_svm, nuclear_svm

_INSTANCE_DOC = {
    "*X": "tokens X (n, L, d) of the instance named by the prefix",
    "*y": "labels y (n,)",
    "*z": "queries z (n, d)",
    "*v": "head v (d,)",
    "*seed": "the seed it was drawn from",
}
_SVM_DOC = {
    "*nuc_x": "W*_nuc, the nuclear-norm SVM solution (NaN: not solved)",
    "*nuc_norm": "‖W*_nuc‖_*",
    "*nuc_margins": "⟨M_j, W*_nuc⟩ per constraint",
    "*frob_x": "W*_F, the Frobenius SVM solution (NaN: not solved)",
    "*frob_norm": "‖W*_F‖_F",
    "*frob_margins": "⟨M_j, W*_F⟩ per constraint",
}


def _store(prefix: str, inst: dn.Instance) -> dict:
    return {f"{prefix}{k}": getattr(inst, k) for k in ("X", "y", "z", "v", "seed")}


def instance_of(instance: dict, prefix: str = "", **meta) -> dn.Instance:
    """The instance stored under ``prefix`` in a loaded stage file."""
    X, y, z, v = (np.asarray(instance[f"{prefix}{k}"]) for k in ("X", "y", "z", "v"))
    return dn.Instance(X=X, y=y, z=z, v=v, seed=instance[f"{prefix}seed"], meta=meta)


def _solutions(prefix: str, nuc, frob) -> dict:
    out = {}
    for name, sol in (("nuc", nuc), ("frob", frob)):
        if sol is not None:
            out.update({f"{prefix}{name}_{k}": getattr(sol, k) for k in ("x", "norm", "margins")})
    return out


def solution(svm: dict, prefix: str, name: str):
    """``(x, norm, margins)`` of the ``name`` ("nuc", "frob") solution under ``prefix``, or None
    when it was not attempted."""
    if f"{prefix}{name}_x" not in svm:
        return None
    return tuple(np.asarray(svm[f"{prefix}{name}_{k}"]) for k in ("x", "norm", "margins"))


def instance_p4(n, L, d, seed):
    """p4: the aligned instance (docs/papers/nucnorm.md#nucnorm_p4), with its token-to-coordinate
    map k."""
    inst = dn.aligned_instance(n, L, d, seed)
    doc = dict(_INSTANCE_DOC, k="coordinate k_i of each input (z_i = e_{k_i})")
    return dict(_store("", inst), k=inst.meta["k"]), doc


def svm_p4(instance):
    """p4: both SVM solutions and the closed form on aligned data."""
    inst = instance_of(instance, k=np.asarray(instance["k"]))
    M = inst.features()
    out = _solutions("", nuclear_svm(M), frobenius_svm(M))
    out["closed_form"] = dn.aligned_closed_form(inst)
    return out, dict(_SVM_DOC, closed_form="the SVM solution in closed form (both norms)")


# what store_selected and store_svm write (the docs of their stage files)
SELECTED_DOC = dict(
    _INSTANCE_DOC,
    **{
        "*requested_seed": "the seed the selection started from",
        "*skipped_seeds": "the seeds it rejected before this one, in order",
        "*skipped_reasons": "why each of them was rejected",
    },
)
NORMSVM_DOC = {
    "*_x": "solution of the SVM named before the suffix (nuc, frob: W*; l1, l2: β*)",
    "*_norm": "its norm (the objective)",
    "*_status": "the solver's status",
    "*_dual": "its multipliers, one per constraint",
    "*_margins": "⟨M_j, x⟩ per constraint",
}


def store_selected(prefix: str, inst: dn.Instance) -> dict:
    """The arrays of an instance chosen by :func:`attnbias.data.nucnorm.select_instance`, with
    the selection's record (``requested_seed``, ``skipped_seeds``, ``skipped_reasons``)."""
    skipped = inst.meta["skipped"]
    return dict(
        _store(prefix, inst),
        **{
            f"{prefix}requested_seed": inst.meta["requested_seed"],
            f"{prefix}skipped_seeds": np.array([s for s, _ in skipped], dtype=np.int64),
            f"{prefix}skipped_reasons": np.array([r for _, r in skipped], dtype=str),
        },
    )


def selected_of(instance: dict, prefix: str = "") -> dn.Instance:
    """The instance stored by :func:`store_selected`, its ``meta`` the selection's record
    (``requested_seed``, ``skipped``: [[seed, reason], ...]) as select_instance gives it."""
    seeds = np.asarray(instance[f"{prefix}skipped_seeds"]).tolist()
    reasons = np.asarray(instance[f"{prefix}skipped_reasons"]).tolist()
    inst = instance_of(
        instance,
        prefix,
        requested_seed=int(instance[f"{prefix}requested_seed"]),
        skipped=[[int(s), str(r)] for s, r in zip(seeds, reasons, strict=True)],
    )
    inst.seed = int(inst.seed)
    return inst


def store_svm(prefix: str, **solutions: NormSVM) -> dict:
    """The arrays of whole SVM solutions, each under ``<prefix><name>_``."""
    return {
        f"{prefix}{name}_{f.name}": getattr(sol, f.name)
        for name, sol in solutions.items()
        for f in fields(NormSVM)
    }


def svm_of(svm: dict, prefix: str, name: str) -> NormSVM:
    """The solution ``name`` stored by :func:`store_svm` under ``prefix``."""
    get = lambda k: svm[f"{prefix}{name}_{k}"]  # noqa: E731
    return NormSVM(
        x=np.asarray(get("x")),
        norm=float(get("norm")),
        status=str(get("status")),
        dual=np.asarray(get("dual")),
        margins=np.asarray(get("margins")),
    )


def p5_keys(n_values, L_values, d_values, instances, seed0) -> list[tuple]:
    """The p5 instances as (n, L, d, seed), in the order they are drawn and tabulated."""
    return [
        (n, L, d, seed0 + k)
        for n in n_values
        for L in L_values
        for d in d_values
        for k in range(instances)
    ]


def p5_prefix(n, L, d, seed) -> str:
    """The prefix of a p5 instance's arrays in the stage files."""
    return f"n{n}_L{L}_d{d}_s{seed}_"


def instance_p5(n_values, L_values, d_values, instances, seed0, self_attention):
    """p5: ``instances`` random instances (seeds seed0, seed0 + 1, ...) of every (n, L, d)."""
    arrays = {}
    for n, L, d, s in p5_keys(n_values, L_values, d_values, instances, seed0):
        arrays.update(_store(p5_prefix(n, L, d, s), dn.random_instance(n, L, d, s, self_attention)))
    return arrays, _INSTANCE_DOC


def svm_p5(instance):
    """p5: W*_nuc of every instance, and W*_F where W*_nuc was solved (not strict: a failed
    solve is stored as NaN)."""
    out = {}
    prefixes = sorted({k[: -len("seed")] for k in instance if k.endswith("_seed")})
    for prefix in prefixes:
        M = instance_of(instance, prefix).features()
        Wn = nuclear_svm(M, strict=False)
        Wf = frobenius_svm(M, strict=False) if np.all(np.isfinite(Wn.x)) else None
        out.update(_solutions(prefix, Wn, Wf))
    return out, _SVM_DOC
