"""Synthetic cross-attention instances of nucnorm and instance selection
(docs/papers/nucnorm.md#instances-and-selection; the aligned data of
docs/papers/nucnorm.md#nucnorm_p4).

An instance has tokens X (n, L, d), labels y (n,), query tokens z (n, d) and a fixed unit head
v (d,).  Token scores γ_it = y_i vᵀx_it, optimal tokens opt_i = argmax_t γ_it, and the SVM
features M_{i,t} = (x_{i,opt_i} − x_{i,t}) z_iᵀ for t ≠ opt_i (rows ordered by i, then t).  The
diagonal model W = diag β uses the features m_{i,t} = (x_{i,opt_i} − x_{i,t}) ⊙ z_i.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..io import NotMeasurable
from ..metrics.core import cosine
from ..metrics.rank import numerical_rank, singular_values
from ..svm.nuclear import frobenius_svm, l1_svm, l2_svm, nuclear_svm
from ..svm.qp import InfeasibleSVM
from .synthetic import sphere


@dataclass
class Instance:
    X: np.ndarray  # (n, L, d)
    y: np.ndarray  # (n,)
    z: np.ndarray  # (n, d)
    v: np.ndarray  # (d,)
    seed: int | None = None
    meta: dict = field(default_factory=dict)

    @property
    def gamma(self) -> np.ndarray:
        """γ_it = y_i vᵀx_it (n, L)."""
        return self.y[:, None] * (self.X @ self.v)

    @property
    def opt(self) -> np.ndarray:
        return np.argmax(self.gamma, axis=1)

    @property
    def loss_star(self) -> float:
        """𝓛* = (1/n) Σ_i exp(−γ_{i,opt_i}), the infimum of the exponential risk."""
        return float(np.mean(np.exp(-np.max(self.gamma, axis=1))))

    def _pairs(self):
        n, L, _ = self.X.shape
        opt = self.opt
        ii, tt = zip(*[(i, t) for i in range(n) for t in range(L) if t != opt[i]], strict=True)
        ii, tt = np.array(ii), np.array(tt)
        return ii, tt, self.X[ii, opt[ii]] - self.X[ii, tt]

    def features(self) -> np.ndarray:
        """M_{i,t} = (x_opt − x_t) z_iᵀ, shape (n(L−1), d, d)."""
        ii, _, diff = self._pairs()
        return diff[:, :, None] * self.z[ii][:, None, :]

    def diag_features(self) -> np.ndarray:
        """m_{i,t} = (x_opt − x_t) ⊙ z_i, shape (n(L−1), d)."""
        ii, _, diff = self._pairs()
        return diff * self.z[ii]


def random_instance(n: int, L: int, d: int, seed: int, self_attention: bool = False) -> Instance:
    """The random instance of docs/papers/nucnorm.md#instances-and-selection: v, y, X, z drawn in
    that order from ``default_rng(seed)``; v, tokens, z unit-norm.

    y_i is the sign of a standard normal draw; this stream reproduces the illustrative draws listed
    there (seed 0 with n = L = 5, d = 6; seed 1 with n = L = 3, d = 8).

    ``self_attention``: use z_i = x_{i,1} (the query is the first token) instead of a fresh z_i.
    """
    rng = np.random.default_rng(seed)
    v = sphere(rng, (), d)
    y = np.where(rng.standard_normal(n) >= 0, 1.0, -1.0)  # ±1 with probability ½ each
    X = sphere(rng, (n, L), d)
    z = sphere(rng, (n,), d)
    if self_attention:
        z = X[:, 0].copy()
    return Instance(X=X, y=y, z=z, v=v, seed=seed)


def solve_pair(inst: Instance, model: str) -> dict | None:
    """Both SVMs of ``model`` ("full": nuclear and Frobenius; "diag": ℓ1 and ℓ2), or None if
    either is infeasible.  Keys ``low`` (nuclear / ℓ1) and ``high`` (Frobenius / ℓ2)."""
    try:
        if model == "full":
            M = inst.features()
            return {"low": nuclear_svm(M), "high": frobenius_svm(M)}
        if model == "diag":
            A = inst.diag_features()
            return {"low": l1_svm(A), "high": l2_svm(A)}
    except InfeasibleSVM:
        return None
    raise ValueError(f"model must be 'full' or 'diag', got {model!r}")


REQUIREMENTS = ("full", "rank_gap", "diag", "mixed_signs")


def check_instance(
    inst: Instance, require=("full",), corr_max: float = 0.98, rank_tol: float = 1e-4
):
    """Test the convex selection criteria (docs/papers/nucnorm.md#instances-and-selection) on one
    instance.

    Requirements: "full" (nuclear and Frobenius SVMs feasible, corr(W*_nuc, W*_F) ≤ corr_max),
    "rank_gap" (rank_tol-rank of W*_nuc below that of W*_F; implies "full"), "diag" (ℓ1 and ℓ2
    SVMs feasible, corr(β*_ℓ1, β*_ℓ2) ≤ corr_max), "mixed_signs" (β*_ℓ1 has entries of both
    signs; implies "diag").  Returns (ok, reason, solutions) with solutions
    ``{"full": {"low": W*_nuc, "high": W*_F}, "diag": {"low": β*_ℓ1, "high": β*_ℓ2}}`` for the
    models that were needed.
    """
    unknown = set(require) - set(REQUIREMENTS)
    if unknown:
        raise ValueError(
            f"unknown requirements {sorted(unknown)}; expected a subset of {REQUIREMENTS}"
        )
    need = {
        "full": bool({"full", "rank_gap"} & set(require)),
        "diag": bool({"diag", "mixed_signs"} & set(require)),
    }
    sols = {}
    for model in ("full", "diag"):
        if not need[model]:
            continue
        pair = solve_pair(inst, model)
        if pair is None:
            return False, f"{model} SVMs infeasible", sols
        c = float(cosine(pair["low"].x, pair["high"].x))
        if c > corr_max:
            return False, f"{model}: corr of the two SVM solutions {c:.4f} > {corr_max:g}", sols
        sols[model] = pair
    if "rank_gap" in require:
        r = [
            int(numerical_rank(singular_values(sols["full"][k].x), rank_tol))
            for k in ("low", "high")
        ]
        if r[0] >= r[1]:
            return False, f"rank(W*_nuc) = {r[0]} not below rank(W*_F) = {r[1]}", sols
    if "mixed_signs" in require:
        b = sols["diag"]["low"].x
        big = b[np.abs(b) > 1e-4 * np.max(np.abs(b))]
        if not (np.any(big > 0) and np.any(big < 0)):
            return False, "the l1-SVM solution has a single sign", sols
    return True, "", sols


def select_instance(
    n: int,
    L: int,
    d: int,
    seed: int,
    require=("full",),
    corr_max: float = 0.98,
    rank_tol: float = 1e-4,
    max_tries: int = 200,
    self_attention: bool = False,
    accept=None,
    exclude=(),
) -> tuple[Instance, dict]:
    """The first seed ≥ ``seed`` (not in ``exclude``) whose instance passes :func:`check_instance`
    and, when given, ``accept(inst, solutions) -> (ok, reason)`` (e.g. a dynamical premise).

    The returned instance has ``seed`` = the seed used; ``meta`` records the requested seed, the
    requirements and every skipped seed with its reason (``meta["skipped"]``).  No seed in
    ``max_tries``: :class:`attnbias.io.NotMeasurable`, naming each skipped seed's reason.
    """
    skipped = []
    for s in range(seed, seed + max_tries):
        if s in exclude:
            continue
        inst = random_instance(n, L, d, s, self_attention)
        ok, reason, sols = check_instance(inst, require, corr_max, rank_tol)
        if ok and accept is not None:
            ok, reason = accept(inst, sols)
        if ok:
            inst.meta.update(requested_seed=seed, require=list(require), skipped=skipped)
            return inst, sols
        skipped.append([s, reason])
    # a property of these sizes and draws, not a bug: the figure is recorded as not measurable
    raise NotMeasurable(
        f"no instance with n={n}, L={L}, d={d} meets {list(require)} in seeds "
        f"{seed}..{seed + max_tries - 1}: {skipped}"
    )


def aligned_instance(n: int, L: int, d: int, seed: int) -> Instance:
    """The aligned data of docs/papers/nucnorm.md#nucnorm_p4: U = U′ = I, z_i = e_{k_i} with
    k_i = i mod d, x_it = a_it e_{k_i} + c_i.

    a_it ~ N(0, 1); c_i ~ N(0, I/d) is shared by the tokens of input i, so every token difference
    (hence every feature M_{i,t}) is a multiple of e_{k_i} e_{k_i}ᵀ.  Drawn from
    ``default_rng(seed)`` in the order v, y, a, c.
    """
    rng = np.random.default_rng(seed)
    v = sphere(rng, (), d)
    y = rng.choice([-1.0, 1.0], size=n)
    a = rng.standard_normal((n, L))
    c = rng.standard_normal((n, d)) / np.sqrt(d)
    k = np.arange(n) % d
    E = np.eye(d)[k]  # (n, d)
    X = a[:, :, None] * E[:, None, :] + c[:, None, :]
    return Instance(X=X, y=y, z=E.copy(), v=v, seed=seed, meta={"k": k})


def aligned_closed_form(inst: Instance) -> np.ndarray:
    """The SVM solution on aligned data (both norms): the constraints decouple per coordinate k,
    W_kk (a_opt − a_t) ≥ 1, so W_kk = sign/min_t |a_opt − a_t| over the inputs with k_i = k
    (the largest requirement wins; the sign is shared by construction when one input per k).
    Off-diagonal entries and coordinates without inputs are 0."""
    k = np.asarray(inst.meta["k"])
    d = inst.X.shape[-1]
    a = inst.X[np.arange(len(k)), :, k]  # a_it + c_ik
    opt = inst.opt
    W = np.zeros((d, d))
    for i, ki in enumerate(k):
        gaps = np.delete(a[i, opt[i]] - a[i], opt[i])
        need = np.sign(gaps[0]) / np.min(np.abs(gaps))
        if abs(need) > abs(W[ki, ki]):
            W[ki, ki] = need
    return W
