"""Hard-margin SVMs under the nuclear, Frobenius, ℓ1 and ℓ2 norms (cvxopt).

Every program here has the constraints ⟨M_j, x⟩ ≥ b_j (j = 1..m) and minimises a norm of x:

* :func:`nuclear_svm`   min ‖W‖_* over matrices W (p, q): a semidefinite program,
* :func:`frobenius_svm` min ‖W‖_F: the min-norm QP :func:`attnbias.svm.qp.min_norm_qp` on vec(M_j),
* :func:`l1_svm`        min ‖β‖₁ over vectors: a linear program,
* :func:`l2_svm`        min ‖β‖₂: :func:`~attnbias.svm.qp.min_norm_qp` again.

Nuclear norm.  ‖W‖_* = min ½(tr U + tr V) over [[U, W], [Wᵀ, V]] ⪰ 0, so the SVM is the SDP

    (P)  min ½(tr U + tr V)  s.t.  [[U, W], [Wᵀ, V]] ⪰ 0,  ⟨M_j, W⟩ ≥ b_j,

whose conic dual is

    (D)  max bᵀλ  s.t.  ‖Σ_j λ_j M_j‖_op ≤ 1  (⟺ Σ_j λ_j [[0, M_j], [M_jᵀ, 0]] ≼ I),  λ ≥ 0.

``form="dual"`` (default) hands (D) to ``cvxopt.solvers.sdp``: m unknowns and one LMI of size
p + q.  cvxopt returns the LMI's multiplier Z ⪰ 0 and Z = ½[[U, W], [Wᵀ, V]] solves (P), so W is
twice its off-diagonal block.  ``form="primal"`` solves (P) directly over (W, U, V) (pq + p(p+1)/2
+ q(q+1)/2 unknowns) and is kept as an independent cross-check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frobenius import frobenius_svm  # noqa: F401  (re-exported: the one Frobenius SVM)
from .qp import DEFAULT_OPTIONS, TIGHT_OPTIONS, InfeasibleSVM, cvxopt, cvxopt_matrix, min_norm_qp


@dataclass
class NormSVM:
    """Solution of a min-norm SVM: ``x`` (matrix or vector), its ``norm`` (the objective), the
    solver ``status``, the multipliers ``dual`` (one per constraint) and the ``margins``
    ⟨M_j, x⟩."""

    x: np.ndarray
    norm: float
    status: str
    dual: np.ndarray
    margins: np.ndarray


def _prepare(M, b):
    M = np.asarray(M, dtype=np.float64)
    b = np.ones(M.shape[0]) if b is None else np.asarray(b, dtype=np.float64).reshape(-1)
    if b.shape[0] != M.shape[0]:
        raise ValueError(f"{M.shape[0]} feature matrices but {b.shape[0]} right-hand sides")
    return M, b


def _feasible(margins, b, tol=1e-5):
    return bool(np.all(margins >= b - tol * np.maximum(1.0, np.abs(b))))


def _failed(shape, m, status, strict, what):
    if strict:
        raise InfeasibleSVM(f"{what} not solved (status {status!r}); constraints may be infeasible")
    return NormSVM(np.full(shape, np.nan), np.nan, status, np.full(m, np.nan), np.full(m, np.nan))


# Interior-point SDPs sometimes stall at 1e-10 on well-posed instances (they converge in 10-20
# iterations when they do), so the tight rung is capped at 30 iterations and an intermediate rung
# keeps the answer accurate before falling back to cvxopt's defaults (1e-7).
_LADDER = (
    dict(TIGHT_OPTIONS, maxiters=30),
    dict(TIGHT_OPTIONS, abstol=1e-9, reltol=1e-9, feastol=1e-9, maxiters=50),
    DEFAULT_OPTIONS,
)


def _solve(call):
    """Run a cvxopt solver down the tolerance ladder until it reports "optimal"."""
    sol = {"status": "not run"}
    for options in _LADDER:
        try:
            sol = call(options)
        except (ValueError, ArithmeticError) as exc:  # cvxopt's "domain error" / singular KKT
            sol = {"status": f"error: {exc}"}
            continue
        if sol["status"] == "optimal":
            break
    return sol


def _sym_basis(k: int) -> list[np.ndarray]:
    """Basis E_ab + E_ba (a ≥ b; E_aa on the diagonal) of symmetric k × k matrices."""
    out = []
    for a in range(k):
        for c in range(a + 1):
            E = np.zeros((k, k))
            E[a, c] = E[c, a] = 1.0
            out.append(E)
    return out


def _nuclear_dual(M, b, options):
    m, p, q = M.shape
    H = np.zeros((m, p + q, p + q))
    H[:, :p, p:] = M
    H[:, p:, :p] = np.swapaxes(M, 1, 2)
    Gs = H.reshape(m, -1).T  # column j = vec(H_j) (symmetric, so row/column-major agree)
    sol = cvxopt.solvers.sdp(
        cvxopt_matrix(-b),
        Gl=cvxopt_matrix(-np.eye(m)),
        hl=cvxopt_matrix(np.zeros(m)),
        Gs=[cvxopt_matrix(Gs)],
        hs=[cvxopt_matrix(np.eye(p + q))],
        options=options,
    )
    if sol["status"] != "optimal":
        return sol
    Z = np.array(sol["zs"][0])
    sol["W"] = 2.0 * Z[p:, :p].T  # lower-left block (cvxopt fills the lower triangle)
    sol["lambda"] = np.maximum(np.array(sol["x"]).reshape(-1), 0.0)
    return sol


def _nuclear_primal(M, b, options):
    m, p, q = M.shape
    N = p + q
    cols, cost = [], []
    for a in range(p):  # W entries
        for c in range(q):
            E = np.zeros((N, N))
            E[a, p + c] = E[p + c, a] = 1.0
            cols.append(E)
            cost.append(0.0)
    for k, off in ((p, 0), (q, p)):  # U then V (symmetric, lower-triangle parameters)
        for S in _sym_basis(k):
            E = np.zeros((N, N))
            E[off : off + k, off : off + k] = S
            cols.append(E)
            cost.append(0.5 if np.count_nonzero(S) == 1 else 0.0)
    nvar = len(cols)
    Gs = -np.stack([E.reshape(-1) for E in cols], axis=1)  # −[[U, W], [Wᵀ, V]] ≼ 0
    Gl = np.zeros((m, nvar))
    Gl[:, : p * q] = -M.reshape(m, -1)  # −⟨M_j, W⟩ ≤ −b_j
    sol = cvxopt.solvers.sdp(
        cvxopt_matrix(np.asarray(cost)),
        Gl=cvxopt_matrix(Gl),
        hl=cvxopt_matrix(-b),
        Gs=[cvxopt_matrix(Gs)],
        hs=[cvxopt_matrix(np.zeros((N, N)))],
        options=options,
    )
    if sol["status"] != "optimal":
        return sol
    x = np.array(sol["x"]).reshape(-1)
    sol["W"] = x[: p * q].reshape(p, q)
    sol["lambda"] = np.maximum(np.array(sol["zl"]).reshape(-1), 0.0)
    return sol


def nuclear_svm(M, b=None, form: str = "dual", strict: bool = True) -> NormSVM:
    """W*_nuc = argmin ‖W‖_* s.t. ⟨M_j, W⟩ ≥ b_j, for features M (m, p, q) and b (m,) (default 1).

    ``form``: "dual" (m unknowns; W from the LMI multiplier) or "primal" (unknowns W, U, V).
    With ``strict`` an unsolved (e.g. infeasible) program raises :class:`InfeasibleSVM`;
    otherwise the result is NaN with the solver's status.
    """
    M, b = _prepare(M, b)
    if M.ndim != 3:
        raise ValueError(f"features must be (m, p, q), got {M.shape}")
    m, p, q = M.shape
    if form not in ("dual", "primal"):
        raise ValueError(f"form must be 'dual' or 'primal', got {form!r}")
    solver = _nuclear_dual if form == "dual" else _nuclear_primal
    sol = _solve(lambda options: solver(M, b, options))
    status = sol["status"]
    if status != "optimal":
        return _failed((p, q), m, status, strict, "nuclear-norm SVM")
    W = sol["W"]
    margins = np.einsum("jab,ab->j", M, W)
    if not _feasible(margins, b):
        return _failed((p, q), m, status, strict, "nuclear-norm SVM")
    norm = float(np.sum(np.linalg.svd(W, compute_uv=False)))
    return NormSVM(W, norm, status, sol["lambda"], margins)


def l2_svm(A, b=None, strict: bool = True) -> NormSVM:
    """β*_ℓ2 = argmin ‖β‖₂ s.t. ⟨a_j, β⟩ ≥ b_j (rows a_j of A (m, d))."""
    A, b = _prepare(A, b)
    res = min_norm_qp(A, b, strict=strict)
    if res.status != "optimal" or not np.all(np.isfinite(res.x)):
        return _failed(A.shape[1], A.shape[0], res.status, strict, "ℓ2 SVM")
    return NormSVM(res.x, res.norm, res.status, res.dual, A @ res.x)


def l1_svm(A, b=None, strict: bool = True) -> NormSVM:
    """β*_ℓ1 = argmin ‖β‖₁ s.t. ⟨a_j, β⟩ ≥ b_j, as the LP min 1ᵀs s.t. −s ≤ β ≤ s, Aβ ≥ b.

    An interior-point LP returns the centre of the optimal face, so when the optimum is not
    unique the reported support is the union of the optimal supports (see :func:`l1_unique`).
    """
    A, b = _prepare(A, b)
    m, d = A.shape
    eye = np.eye(d)
    G = np.block([[-A, np.zeros((m, d))], [eye, -eye], [-eye, -eye]])
    h = np.concatenate([-b, np.zeros(2 * d)])
    c = np.concatenate([np.zeros(d), np.ones(d)])
    sol = _solve(
        lambda options: cvxopt.solvers.lp(
            cvxopt_matrix(c), cvxopt_matrix(G), cvxopt_matrix(h), options=options
        )
    )
    if sol["status"] != "optimal":
        return _failed(d, m, sol["status"], strict, "ℓ1 SVM")
    beta = np.array(sol["x"]).reshape(-1)[:d]
    margins = A @ beta
    if not _feasible(margins, b):
        return _failed(d, m, sol["status"], strict, "ℓ1 SVM")
    lam = np.maximum(np.array(sol["z"]).reshape(-1)[:m], 0.0)
    return NormSVM(beta, float(np.sum(np.abs(beta))), sol["status"], lam, margins)


def l1_unique(A, res: NormSVM, tol: float = 1e-6) -> bool:
    """Sufficient test that the ℓ1-SVM optimum ``res`` is unique.

    With S the support of β*, the active rows A_act and the multipliers λ: the optimum is unique
    when the columns of A_act restricted to S are linearly independent and the dual certificate
    c = A_actᵀλ_act is strictly inside the unit box off the support (|c_j| < 1 for j ∉ S).
    """
    A = np.asarray(A, dtype=np.float64)
    beta = res.x
    scale = max(np.max(np.abs(beta)), 1e-300)
    S = np.abs(beta) > 1e-4 * scale
    act = res.margins <= 1.0 + 1e-6 * max(1.0, float(np.max(res.margins)))
    cert = A[act].T @ res.dual[act]
    sub = A[np.ix_(act, S)]
    independent = np.linalg.matrix_rank(
        sub, tol=tol * max(1.0, np.max(np.abs(sub), initial=0.0))
    ) == int(S.sum())
    strict_off = bool(np.all(np.abs(cert[~S]) < 1.0 - tol)) if (~S).any() else True
    return bool(independent and strict_off)


def margins(M, x) -> np.ndarray:
    """⟨M_j, x⟩ for every constraint j: M (m, *shape), x (..., *shape) → (..., m)."""
    M = np.asarray(M, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    k = M.ndim - 1
    xf = x.reshape(x.shape[: x.ndim - k] + (-1,))
    return xf @ M.reshape(M.shape[0], -1).T


def margin(M, x) -> np.ndarray:
    """γ(x) = min_j ⟨M_j, x⟩, batched over the leading axes of x."""
    return np.min(margins(M, x), axis=-1)
