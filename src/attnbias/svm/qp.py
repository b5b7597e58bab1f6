"""Minimum-norm linear-constraint QPs with cvxopt.

Every hard-margin SVM in the package is an instance of

    minimise ½‖x‖²  subject to  A x ≥ b,

solved in the primal (d variables) or, when the constraints are fewer than the variables, in the
dual (m multipliers): maximise bᵀλ − ½ λᵀ(AAᵀ)λ over λ ≥ 0, with x = Aᵀλ.  The dual is what makes
W_mm with d² = 4,096 variables a small QP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:  # cvxopt is a hard dependency; imported lazily to keep `import attnbias` light
    import cvxopt
    import cvxopt.solvers
except ImportError as exc:  # pragma: no cover
    raise ImportError("attnbias.svm needs cvxopt (pip install cvxopt)") from exc

# Tighter than cvxopt's defaults (1e-7): the closed-form SVMs of the methods pages
# (docs/papers/) are tested to 1e-6.
# When the tight run stops short of "optimal" (it can stall on near-degenerate instances) the QP
# is solved again with cvxopt's defaults.
TIGHT_OPTIONS = {"show_progress": False, "abstol": 1e-10, "reltol": 1e-10, "feastol": 1e-10}
DEFAULT_OPTIONS = {"show_progress": False}


class InfeasibleSVM(RuntimeError):
    """The constraint set is empty (or the solver could not certify a solution)."""


@dataclass
class QPResult:
    x: np.ndarray  # the solution
    status: str  # cvxopt status ("optimal", ...)
    objective: float  # ½‖x‖² (the value cvxopt prints)
    dual: np.ndarray  # multipliers λ ≥ 0, one per constraint row

    @property
    def norm(self) -> float:
        return float(np.linalg.norm(self.x))


def cvxopt_matrix(a: np.ndarray) -> cvxopt.matrix:
    return cvxopt.matrix(np.ascontiguousarray(a, dtype=np.float64))


def min_norm_qp(
    A: np.ndarray, b: np.ndarray, method: str = "auto", strict: bool = True
) -> QPResult:
    """Solve min ½‖x‖² s.t. A x ≥ b.

    ``method``: "primal", "dual" or "auto" (dual when A has fewer rows than columns).
    With ``strict`` an unsolved problem raises :class:`InfeasibleSVM`; otherwise the result has
    the solver's status and a NaN solution.
    """
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    m, d = A.shape
    if b.shape[0] != m:
        raise ValueError(f"A has {m} rows but b has {b.shape[0]} entries")
    if method == "auto":
        method = "dual" if m < d else "primal"
    if method not in ("primal", "dual"):
        raise ValueError(f"method must be 'auto', 'primal' or 'dual', got {method!r}")
    sol = {"status": "not run"}
    x = lam = np.full(d if method == "primal" else m, np.nan)
    for options in (TIGHT_OPTIONS, DEFAULT_OPTIONS):
        try:
            if method == "primal":
                sol = cvxopt.solvers.qp(
                    cvxopt_matrix(np.eye(d)),
                    cvxopt_matrix(np.zeros(d)),
                    cvxopt_matrix(-A),
                    cvxopt_matrix(-b),
                    options=options,
                )
                x = np.array(sol["x"]).reshape(-1)
                lam = np.array(sol["z"]).reshape(-1)
            else:
                gram = A @ A.T
                # min ½ λᵀGλ − bᵀλ s.t. −λ ≤ 0; a tiny ridge keeps a rank-deficient Gram PD
                gram = gram + 1e-12 * max(1.0, float(np.trace(gram)) / m) * np.eye(m)
                sol = cvxopt.solvers.qp(
                    cvxopt_matrix(gram),
                    cvxopt_matrix(-b),
                    cvxopt_matrix(-np.eye(m)),
                    cvxopt_matrix(np.zeros(m)),
                    options=options,
                )
                lam = np.maximum(np.array(sol["x"]).reshape(-1), 0.0)
                x = A.T @ lam
        except (ValueError, ArithmeticError) as exc:  # cvxopt's "domain error" on infeasible data
            sol = {"status": f"error: {exc}"}
            continue
        if sol["status"] == "optimal":
            break
    status = sol["status"]
    feasible = (
        status == "optimal"
        and x.shape == (d,)
        and bool(np.all(A @ x >= b - 1e-5 * np.maximum(1.0, np.abs(b))))
    )
    if not feasible:
        if strict:
            raise InfeasibleSVM(
                f"min-norm QP not solved (status {status!r}); constraints may be infeasible"
            )
        x = np.full(d, np.nan)
    return QPResult(x=x, status=status, objective=0.5 * float(x @ x), dual=lam)
