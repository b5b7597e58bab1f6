"""lowrank toys (Fig 1, App. Fig. A, figL): exact numbers from docs/papers/lowrank.md, and claims
that can fail."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from attnbias.analysis.lowrank import log_slope
from attnbias.claims import lowrank as lowrank_claims
from attnbias.experiments import lowrank as lr
from attnbias.io import jsonable
from attnbias.optim import adam_run
from attnbias.workflow import load_config

ROOT = Path(__file__).resolve().parents[2]
FIG1 = dict(
    lr=0.05,
    steps=1000,
    init_std=0.5,
    seed=0,
    lambdas=[0, 0.1, 0.2, 0.4, 0.8, 1.2],
    d=[0.2, 0.4, 0.6, 0.8, 1.0],
)
FIGA = dict(
    lr=0.01,
    betas=[0.9, 0.999],
    eps=1e-8,
    steps=5000,
    lambdas=[0.01, 0.1, 0.3],
    inits=[[0.5, 0.5], [0.3, 0.6], [0.6, 0.3]],
    x=[1.0, 2.0],
    record_every=10,
)
FIGL = dict(
    dim=20,
    hidden=32,
    sigma_step=0.05,
    noise=0.01,
    batch=256,
    lr=0.05,
    steps=5000,
    init_std=0.1,
    lambdas=[0, 0.15, 0.45, 0.95],
    teacher_seed=0,
    noise_seed=1,
    record_every=50,
)


def _roundtrip(meta):
    """Meta as the claim rule sees it (through the JSON sidecar)."""
    return json.loads(json.dumps(jsonable(meta)))


def _passed(claims):
    return {c.id: c.passed for c in claims}


@pytest.fixture(scope="module")
def fig1():
    df, meta = lr.compute_fig1(**FIG1)
    return df, _roundtrip(meta)


@pytest.fixture(scope="module")
def figL():
    df, meta = lr.compute_figL(**FIGL)
    return df, _roundtrip(meta)


def test_one_gd_step_reproduces_the_discrete_imbalance_identity():
    """A′ᵀA′ − B′ᵀB′ = (1 − ηλ)²(AᵀA − BᵀB) + η²(BᵀGᵀGB − AᵀGGᵀA)
    (docs/papers/lowrank.md#conventions)."""
    rng = np.random.default_rng(5)
    D = np.diag([0.2, 0.4, 0.6, 0.8, 1.0])
    lams = np.array([0.0, 0.3, 1.2])
    A = np.repeat(0.5 * rng.standard_normal((1, 5, 5)), 3, 0)
    B = np.repeat(0.5 * rng.standard_normal((1, 5, 5)), 3, 0)
    eta = 0.05
    out = lr.fig1_grad_fn(D, lams)({"A": A, "B": B})
    G = out["G"]
    A1 = A - eta * out["grads"]["A"][0]
    B1 = B - eta * out["grads"]["B"][0]
    T = lambda X: np.swapaxes(X, -1, -2)  # noqa: E731
    lhs = T(A1) @ A1 - T(B1) @ B1
    c = (1 - eta * lams)[:, None, None] ** 2
    rhs = c * (T(A) @ A - T(B) @ B) + eta**2 * (T(B) @ T(G) @ G @ B - T(A) @ G @ T(G) @ A)
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-12)


def test_fig1_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    D = np.diag([0.2, 0.4, 0.6, 0.8, 1.0])
    A, B = rng.standard_normal((1, 5, 5)), rng.standard_normal((1, 5, 5))
    f = lr.fig1_grad_fn(D, [0.7])
    g = f({"A": A, "B": B})["grads"]["A"][0]
    E = np.zeros_like(A)
    E[0, 2, 3] = 1e-6
    fd = (f({"A": A + E, "B": B})["loss"] - f({"A": A - E, "B": B})["loss"]) / 2e-6
    assert fd[0] == pytest.approx(g[0, 2, 3], rel=1e-6)


def test_fig1_soft_threshold_and_rates(fig1):
    df, meta = fig1
    last = df[df.t == 1000].set_index("lam")
    s = last.loc[0.2, [f"s{i}" for i in range(1, 6)]].to_numpy(float)
    np.testing.assert_allclose(s, [0.9, 0.7, 0.5, 0.3, 0.1], atol=1e-6)
    s = last.loc[1.2, [f"s{i}" for i in range(1, 6)]].to_numpy(float)
    np.testing.assert_allclose(s[[0, 1, 3, 4]], [0.4, 0.2, 0.0, 0.0], atol=1e-6)
    assert 1e-3 < s[2] < 1e-2  # d = 0.6 = λ/2: only polynomial decay (excluded from the check)
    g = df[df.lam == 0.4].sort_values("t")
    slope = log_slope(g.t, g.imbalance, 50, 300, floor=1e-6)
    assert slope / (2 * 0.05 * 0.4) == pytest.approx(1.0205, abs=1e-3)  # the (1 − ηλ)² factor
    assert last.loc[0.0, "gap"] > 1.5  # no decay without weight decay
    claims = lowrank_claims.fig1((df, meta))
    assert all(c.passed for c in claims), [c for c in claims if not c.passed]
    assert {c.id for c in claims} == {
        "imbalance_slope",
        "gap_final",
        "soft_threshold_final",
        "lam0_imbalance_constant",
        "lam0_gap_no_decay",
    }


def test_fig1_claims_can_fail(fig1):
    df, meta = fig1
    bad = df.copy()
    bad.loc[(bad.t == 1000) & (bad.lam == 0.2), "s1"] += 0.01
    bad.loc[(bad.t == 1000) & (bad.lam == 0.8), "gap"] = 1e-3
    res = _passed(lowrank_claims.fig1((bad, meta)))
    assert res["soft_threshold_final"] is False and res["gap_final"] is False
    meta2 = dict(meta, lr=0.04)  # a wrong η changes the predicted rate by 25%
    assert _passed(lowrank_claims.fig1((df, meta2)))["imbalance_slope"] is False


def test_figA_fixed_points():
    df, meta = lr.compute_figA(**FIGA)
    meta = _roundtrip(meta)
    last = df[df.t == FIGA["steps"]]
    d = last[
        (last.parameterisation == "direct") & (last.optimizer == "adam_l2") & (last.lam == 0.3)
    ]
    np.testing.assert_allclose(
        d[["w1", "w2"]].to_numpy(), np.tile([2 / 10.3, 4 / 10.3], (3, 1)), atol=1e-6
    )
    f = last[
        (last.parameterisation == "factorised") & (last.optimizer == "adam_l2") & (last.lam == 0.1)
    ]
    np.testing.assert_allclose(f.w2, 0.5 - 0.1 / 8, atol=1e-5)
    assert np.all(np.abs(f.w1) < 1e-8)
    w = last[(last.parameterisation == "direct") & (last.optimizer == "adamw") & (last.lam == 0.3)]
    np.testing.assert_allclose(w[["w1", "w2"]].to_numpy(), 1 / 3, atol=2e-3)  # min-ℓ∞ point
    claims = lowrank_claims.figA((df, meta))
    assert all(c.passed for c in claims), [c for c in claims if not c.passed]
    bad = df.copy()
    bad.loc[
        (bad.t == FIGA["steps"])
        & (bad.parameterisation == "factorised")
        & (bad.optimizer == "adam_l2"),
        "w1",
    ] = 0.01
    assert _passed(lowrank_claims.figA((bad, meta)))["adam_l2_factorised_sparse"] is False


def test_adam_matches_torch():
    import torch

    x = np.array([1.0, 2.0])
    theta0 = np.array([[0.3, 0.6, 0.3, 0.6]])
    for decoupled, cls in ((False, torch.optim.Adam), (True, torch.optim.AdamW)):
        _, th = adam_run(
            lr.figA_grad(x, "factorised"),
            theta0,
            50,
            0.01,
            (0.9, 0.999),
            1e-8,
            np.array([0.3]),
            decoupled,
        )
        p = torch.tensor(theta0[0], dtype=torch.float64, requires_grad=True)
        opt = cls([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.3)
        xt = torch.tensor(x, dtype=torch.float64)
        for _ in range(50):
            opt.zero_grad()
            ((p[:2] * p[2:]) @ xt - 1).pow(2).backward()
            opt.step()
        np.testing.assert_allclose(th[-1, 0], p.detach().numpy(), atol=1e-12)


def test_figL_ranks_and_soft_threshold(figL):
    df, meta = figL
    np.testing.assert_array_equal(meta["expected_rank_factorised"], [20, 19, 16, 11])
    last = df[df.t == FIGL["steps"]]
    fac = last[last.model == "factorised"].sort_values("lam")
    np.testing.assert_array_equal(fac.rank_1e2, [20, 19, 16, 11])
    np.testing.assert_array_equal(fac.w1_rank_1e2, [20, 19, 16, 11])
    np.testing.assert_array_equal(last[last.model == "single"].rank_1e2, [20] * 4)
    claims = lowrank_claims.figL((df, meta))
    assert all(c.passed for c in claims), [c for c in claims if not c.passed]
    bad = df.copy()
    bad.loc[(bad.t == FIGL["steps"]) & (bad.model == "single") & (bad.lam == 0.95), "rank_1e2"] = 17
    assert _passed(lowrank_claims.figL((bad, meta)))["single_rank_full"] is False


def test_schema_config_and_ci_config_are_valid():
    """Each settings block is defined once: every key described and required, no unknown keys;
    both presets and the CI settings validate (load_config validates as the workflow does)."""
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "lowrank.schema.yaml").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)

    def walk(node, path="lowrank"):
        if isinstance(node, dict) and "properties" in node:
            assert node.get("additionalProperties") is False, path
            assert set(node.get("required", [])) == set(node["properties"]), path
            for k, v in node["properties"].items():
                assert "description" in v, f"{path}.{k}"
                walk(v, f"{path}.{k}")

    walk(schema)
    quick = load_config(ROOT)["lowrank"]
    paper = load_config(ROOT, scale="paper")["lowrank"]
    ci = ROOT / "tests" / "config" / "ci_lowrank.yaml"
    # CI runs the quick sizes: Fig 2 (without its largest λ, which Fig B does not read) and the
    # ViTs on the first of their seeds, the language models on the first two
    ci_cfg = load_config(ROOT, configfiles=[ci])["lowrank"]
    cut = {k: dict(quick[k], seeds=quick[k]["seeds"][:1]) for k in ("fig2", "vit")}
    cut.update({k: dict(quick[k], seeds=quick[k]["seeds"][:2]) for k in ("fig3", "table1")})
    cut["fig2"]["lambdas"] = quick["fig2"]["lambdas"][:-1]
    assert quick["fig2"]["lambdas"][:-1] == [0, 1, 2] == sorted(quick["figB"]["recall_lambdas"])
    assert ci_cfg == dict(quick, **cut)
    assert paper["lm"]["n_layer"] == 12 and quick["lm"]["n_layer"] == 4
    # the toys have one setting, the same in both presets
    for fig, settings in (("fig1", FIG1), ("figA", FIGA), ("figL", FIGL)):
        assert quick[fig] == settings == paper[fig], fig
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(quick, fig2=dict(quick["fig2"], stepz=3)), schema)


def test_workflow_job_names_resolve_short_and_dotted():
    """``lowrank.<func>`` (package re-export) and ``lowrank.<module>.<func>`` name the same job."""
    from attnbias.workflow import resolve

    jobs = {
        "toys": ["compute_fig1", "compute_figA", "compute_figL"],
        "recall": ["train_recall_job", "gather_fig2"],
        "lm": ["train_lm", "gather_lm"],
        "vit": ["train_vit_wd", "gather_vit"],
        "balance": ["compute_balance", "compute_figB"],
    }
    for module, names in jobs.items():
        for name in names:
            short = resolve("attnbias.experiments", f"lowrank.{name}")
            assert short is resolve("attnbias.experiments", f"lowrank.{module}.{name}")
    for name in ("download_pile", "download_models", "download_image_dataset"):
        assert callable(resolve("attnbias.experiments", f"lowrank.{name}"))
