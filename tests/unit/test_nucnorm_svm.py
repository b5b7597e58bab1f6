"""nucnorm solvers: closed-form nuclear/Frobenius/ℓ1/ℓ2 SVMs, the two SDP forms, duality, and the
optimality invariants of p5 (docs/papers/nucnorm.md#nucnorm_p5)."""

import numpy as np
import pytest

from attnbias.data import nucnorm as dn
from attnbias.metrics.rank import numerical_rank, singular_values
from attnbias.svm.nuclear import (
    frobenius_svm,
    l1_svm,
    l1_unique,
    l2_svm,
    margin,
    margins,
    nuclear_svm,
)
from attnbias.svm.qp import InfeasibleSVM


@pytest.mark.parametrize("form", ["dual", "primal"])
def test_single_diagonal_constraint_closed_form(form):
    # ⟨diag(3, 1), W⟩ ≥ 1: the nuclear norm puts everything on the top singular direction,
    # W*_nuc = diag(1/3, 0) (‖·‖_* = 1/3), the Frobenius norm spreads it, W*_F = diag(3, 1)/10.
    M = np.diag([3.0, 1.0])[None]
    res = nuclear_svm(M, form=form)
    np.testing.assert_allclose(res.x, np.diag([1 / 3, 0.0]), atol=1e-7)
    assert res.norm == pytest.approx(1 / 3, abs=1e-8)
    assert res.dual[0] == pytest.approx(1 / 3, abs=1e-7)  # strong duality: bᵀλ = ‖W*‖_*
    fro = frobenius_svm(M)
    np.testing.assert_allclose(fro.x, np.diag([0.3, 0.1]), atol=1e-7)
    assert fro.norm == pytest.approx(1 / np.sqrt(10), abs=1e-8)


def test_single_constraint_general_matrix_is_top_singular_pair():
    # one constraint ⟨M, W⟩ ≥ 1: W*_nuc = u₁v₁ᵀ/σ₁(M) (rank one), W*_F = M/‖M‖_F² (rank of M)
    rng = np.random.default_rng(3)
    M = rng.standard_normal((4, 5))
    U, s, Vt = np.linalg.svd(M)
    res = nuclear_svm(M[None])
    np.testing.assert_allclose(res.x, np.outer(U[:, 0], Vt[0]) / s[0], atol=1e-6)
    assert res.norm == pytest.approx(1 / s[0], rel=1e-7)
    assert int(numerical_rank(singular_values(res.x), 1e-4)) == 1
    fro = frobenius_svm(M[None])
    np.testing.assert_allclose(fro.x, M / np.sum(M * M), atol=1e-8)
    assert int(numerical_rank(singular_values(fro.x), 1e-4)) == 4


def test_aligned_data_both_svms_equal_closed_form():
    # docs/papers/nucnorm.md#nucnorm_p4: with every feature ∝ e_k e_kᵀ the SVMs decouple per
    # coordinate
    inst = dn.aligned_instance(6, 4, 6, seed=0)
    M = inst.features()
    W_cf = dn.aligned_closed_form(inst)
    assert np.count_nonzero(W_cf - np.diag(np.diag(W_cf))) == 0 and np.all(np.diag(W_cf) != 0)
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    np.testing.assert_allclose(Wn.x, W_cf, atol=1e-6)
    np.testing.assert_allclose(Wf.x, W_cf, atol=1e-6)
    assert Wn.norm == pytest.approx(np.sum(np.abs(np.diag(W_cf))), rel=1e-8)


def test_primal_and_dual_sdp_forms_agree_and_certify():
    inst = dn.random_instance(5, 5, 6, seed=0)
    M = inst.features()
    a, b = nuclear_svm(M, form="dual"), nuclear_svm(M, form="primal")
    assert a.norm == pytest.approx(b.norm, rel=1e-8)
    np.testing.assert_allclose(a.x, b.x, atol=1e-5)
    # dual certificate: λ ≥ 0, ‖Σ λ_j M_j‖_op ≤ 1, and bᵀλ = ‖W*‖_*
    for res in (a, b):
        assert np.all(res.dual >= 0)
        assert np.linalg.norm(np.einsum("j,jab->ab", res.dual, M), 2) <= 1 + 1e-6
        assert res.dual.sum() == pytest.approx(res.norm, rel=1e-7)
        assert margin(M, res.x) >= 1 - 1e-8


def test_spec_instance_spectra_and_optimality_invariants():
    # docs/papers/nucnorm.md#instances-and-selection lists these spectra (n = L = 5, d = 6, seed 0)
    inst = dn.random_instance(5, 5, 6, seed=0)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    sn, sf = singular_values(Wn.x), singular_values(Wf.x)
    np.testing.assert_allclose(sn / sn[0], [1, 0.522, 0.251, 0, 0, 0], atol=1e-3)
    np.testing.assert_allclose(sf / sf[0], [1, 0.743, 0.522, 0.373, 0.019, 0], atol=1e-3)
    assert np.sum(Wn.x * Wf.x) / (np.linalg.norm(Wn.x) * np.linalg.norm(Wf.x)) == pytest.approx(
        0.905, abs=1e-3
    )
    # each solution is optimal for its own norm
    assert sn.sum() <= sf.sum() * (1 + 1e-6)
    assert np.linalg.norm(Wf.x) <= np.linalg.norm(Wn.x) * (1 + 1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_optimality_invariants_random_instances(seed):
    inst = dn.random_instance(10, 3, 8, seed=seed)
    M = inst.features()
    Wn, Wf = nuclear_svm(M), frobenius_svm(M)
    assert Wn.norm <= np.sum(singular_values(Wf.x)) * (1 + 1e-6)
    assert Wf.norm <= np.linalg.norm(Wn.x) * (1 + 1e-6)
    assert min(Wn.margins.min(), Wf.margins.min()) >= 1 - 1e-6
    np.testing.assert_allclose(margins(M, Wn.x), Wn.margins)


def test_l1_and_l2_closed_forms_and_uniqueness():
    a = np.array([[1.0, -3.0, 2.0]])
    r1 = l1_svm(a)
    np.testing.assert_allclose(r1.x, [0.0, -1 / 3, 0.0], atol=1e-8)
    assert r1.norm == pytest.approx(1 / 3, abs=1e-8)
    assert l1_unique(a, r1)
    r2 = l2_svm(a)
    np.testing.assert_allclose(r2.x, a[0] / 14, atol=1e-8)
    # a tie |a_1| = |a_2| makes the ℓ1 optimum a segment: not unique
    tie = np.array([[2.0, -2.0, 1.0]])
    rt = l1_svm(tie)
    assert rt.norm == pytest.approx(
        0.5, abs=1e-6
    )  # degenerate LP: cvxopt stops at its default tolerance
    assert not l1_unique(tie, rt)


def test_diag_svms_are_the_diagonal_restriction():
    # W = diag β: ⟨M_{i,t}, diag β⟩ = βᵀ m_{i,t}, so the nuclear/Frobenius norms become ℓ1/ℓ2
    inst = dn.random_instance(3, 3, 10, seed=2)
    M, A = inst.features(), inst.diag_features()
    np.testing.assert_allclose(np.einsum("jaa->ja", M), A, atol=1e-15)
    b1 = l1_svm(A)
    assert margin(M, np.diag(b1.x)) == pytest.approx(margin(A, b1.x), abs=1e-12)
    # the full nuclear SVM can only do better than its diagonal restriction
    assert nuclear_svm(M).norm <= b1.norm * (1 + 1e-7)


def test_infeasible_constraints():
    M = np.stack([np.eye(2), -np.eye(2)])
    with pytest.raises(InfeasibleSVM):
        nuclear_svm(M)
    with pytest.raises(InfeasibleSVM):
        frobenius_svm(M)
    with pytest.raises(InfeasibleSVM):
        l1_svm(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    res = nuclear_svm(M, strict=False)
    assert np.all(np.isnan(res.x)) and res.status != "optimal"
