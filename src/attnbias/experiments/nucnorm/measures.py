"""Measures shared by the nucnorm demonstrations: recording grid (and the range of the claims'
check step), SVM objective ratios, support size and the cancellation-free excess risk."""

from __future__ import annotations

import numpy as np

from ...data import nucnorm as dn
from ...models import kq


def record_points(steps: int, n_records: int, extra=()) -> list[int]:
    """0, ``steps`` and about ``n_records`` log-spaced iterations in between, plus ``extra``."""
    pts = np.unique(np.round(np.geomspace(1, steps, n_records)).astype(int)) if steps > 0 else []
    return sorted({0, steps} | {int(p) for p in pts} | {int(e) for e in extra if 0 <= e <= steps})


def require_check_step(check_step: int, steps: int) -> None:
    """A ValueError unless the claims' iteration ``check_step`` lies in [1, ``steps``]."""
    if not 0 < check_step <= steps:
        raise ValueError(f"check_step must lie in [1, steps = {steps}], got {check_step}")


def objective_ratio(norm, gam, optimum):
    """R = (‖x‖/γ(x)) / optimum; +inf where the margin γ(x) ≤ 0 (x is then infeasible for every
    rescaling)."""
    norm, gam = np.asarray(norm, dtype=float), np.asarray(gam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gam > 0, norm / np.where(gam > 0, gam, 1.0) / optimum, np.inf)


def norm_margin_ratio(norm, gam, optimum):
    """γ(x)·optimum/‖x‖ = 1/R, defined for every x ≠ 0 (≤ 0 when the margin is not positive)."""
    norm, gam = np.asarray(norm, dtype=float), np.asarray(gam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, gam * optimum / np.where(norm > 0, norm, 1.0), np.nan)


def support_size(b, tol):
    """#{|β_j| > tol·max|β|} along the last axis."""
    b = np.abs(np.asarray(b, dtype=float))
    return np.sum(b > tol * np.max(b, axis=-1, keepdims=True), axis=-1)


def log10_excess(inst: dn.Instance, W: np.ndarray) -> np.ndarray:
    """log10(𝓛 − 𝓛*) at the matrices W (R, d, d), computed without cancellation."""
    out = kq.forward(inst.X, inst.z, inst.gamma, W)
    return kq.log_excess_risk(out["log_s"], inst.gamma) / np.log(10.0)
