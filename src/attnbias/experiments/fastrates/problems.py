"""The data and SVM stages of the synthetic fastrates groups (rules `instance` and `svm`).

``instance_<group>(**data settings)`` draws a group's data, one instance per data seed, stacked
(X (S, n, T, d), y (S, n), u (S, d), opt (S, n)); ``svm_<group>(instance)`` solves W_mm per seed
(:func:`wmm_batch`).  Each returns ``(arrays, doc)`` for :func:`attnbias.io.save_arrays`; the
trajectories (``trajectories_<group>`` in :mod:`.synthetic`) read both, the data through
:func:`datas` as the per-seed :class:`~attnbias.data.fastrates.SeqData` they were drawn as.
"""

from __future__ import annotations

import numpy as np

from ...data import fastrates as fd
from ...svm.frobenius import w_mm

INSTANCE_DOC = {
    "X": "tokens (S, n, T, d), one instance per data seed",
    "y": "labels (S, n)",
    "u": "decoder u of the data model (S, d)",
    "opt": "opt token of each sequence (S, n)",
    "seed": "data seed of each instance (S,)",
    "redraws": "times the data were redrawn (Gaussian data model only) (S,)",
}
SVM_DOC = {
    "Wmm": "W_mm per data seed (S, d, d), the dual QP",
    "wmm_norm": "‖W_mm‖_F per seed",
    "wmm_min_margin": "smallest margin per seed",
    "wmm_n_active": "active constraints per seed (tolerance 1e-6)",
    "wmm_n_constraints": "constraints per seed",
    "wmm_solver": "the QP form solved",
}
_INFO = ("wmm_norm", "wmm_min_margin", "wmm_n_active", "wmm_n_constraints", "wmm_solver")


def wmm_batch(datas: list[fd.SeqData]) -> tuple[np.ndarray, dict]:
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


def _instance(datas: list[fd.SeqData]):
    arrays = dict(fd.stack(datas), seed=[dd.meta["seed"] for dd in datas])
    if all("redraws" in dd.meta for dd in datas):
        arrays["redraws"] = [dd.meta["redraws"] for dd in datas]
    return arrays, INSTANCE_DOC


def datas(instance: dict) -> list[fd.SeqData]:
    """The per-seed data of a loaded instance (meta: ``seed``, and ``redraws`` when drawn)."""
    out = []
    for i, seed in enumerate(np.asarray(instance["seed"]).tolist()):
        meta = {"seed": seed}
        if "redraws" in instance:
            meta["redraws"] = np.asarray(instance["redraws"]).tolist()[i]
        X, y, u, opt = (np.asarray(instance[k])[i] for k in ("X", "y", "u", "opt"))
        out.append(fd.SeqData(X=X, y=y, u=u, opt=opt, meta=meta))
    return out


def wmm(svm: dict) -> tuple[np.ndarray, dict]:
    """W_mm and its summary from a loaded SVM stage (as :func:`wmm_batch` returns them)."""
    info = {k: svm[k] if k == "wmm_solver" else np.asarray(svm[k]).tolist() for k in _INFO}
    return np.asarray(svm["Wmm"]), info


def _svm(instance):
    Wmm, info = wmm_batch(datas(instance))
    return dict(info, Wmm=Wmm), SVM_DOC


def instance_fig2(n, T, d, sigma, seeds):
    """Fig 2: Example 1 (nearly orthogonal tokens, noisy when σ > 0), one instance per seed.
    Figs 8 (σ > 0), 9 and 10 draw their data with it too (``data_of="fig2"`` in the workflow):
    at Fig 2's settings they share its instance and its W_mm, solved once."""
    return _instance([fd.orth_data(n, T, d, sigma, s, True) for s in seeds])


def instance_fig5(n, T, d, seeds, opt_at_query):
    """Fig 5: antipodal opt tokens."""
    return _instance([fd.antipodal_data(n, T, d, s, opt_at_query) for s in seeds])


def instance_fig3(n, T, d, sigma, seeds):
    """Fig 3: the Gaussian-like data model (its decoder u is u_mm)."""
    return _instance([fd.gaussian_data(n, T, d, sigma, s) for s in seeds])


svm_fig2 = svm_fig3 = svm_fig5 = _svm
