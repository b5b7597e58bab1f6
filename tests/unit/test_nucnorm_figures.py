"""nucnorm figures at reduced step counts: the convergence checks pass through the same
claim functions as the workflow, the plots draw, and the checks can fail."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from conftest import ROOT

from attnbias.claims import nucnorm as nucnorm_claims
from attnbias.io import load_data, save_data
from attnbias.plotting import nucnorm as plots
from attnbias.table.stages import run_stages
from attnbias.workflow import deep_update, load_config

# Reduced settings over the schema defaults (docs/papers/nucnorm.md): shorter runs, fewer instances.
REDUCED = {
    "p1": {
        "instances": [{"name": "B", "n": 3, "L": 3, "d": 8, "seed": 1}],
        "steps": 5000,
        "check_step": 5000,
        "n_records": 20,
        "premise_steps": 1500,
        "eta_check_steps": 2000,
    },
    "p2": {
        "seeds": [4],
        "steps": 12000,
        "check_step": 12000,
        "n_records": 20,
        "premise_steps": 1500,
    },
    "p3": {"steps": 3000, "n_records": 20},
    "p4": {"steps": 600, "n_records": 15},
    "p5": {"n_values": [5], "L_values": [3], "d_values": [2, 4, 8], "instances": 10},
}


def settings(fig):
    """The reduced settings over config.yaml's, validated as the workflow does."""
    cfg = load_config(ROOT)["nucnorm"]
    return deep_update(cfg[fig], REDUCED[fig])


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    out = {}
    tmp = tmp_path_factory.mktemp("nucnorm")
    for fig in REDUCED:
        df, meta = run_stages("nucnorm", fig, settings(fig))
        save_data(df, meta, tmp / f"{fig}.csv", preset="test")  # the workflow's round trip
        out[fig] = load_data(tmp / f"{fig}.csv")
    return out


@pytest.mark.parametrize("fig", list(REDUCED))
def test_claims_pass_at_reduced_steps(computed, fig):
    claims = getattr(nucnorm_claims, fig)(computed[fig])
    assert len(claims) >= 4
    failed = [(c.id, c.value, c.threshold) for c in claims if not c.passed]
    assert not failed, failed


@pytest.mark.parametrize("fig", list(REDUCED))
def test_plot_draws(computed, fig):
    f = getattr(plots, fig)(computed[fig])
    assert "project demonstration" in f.get_suptitle()
    assert len(f.axes) >= 2
    plt.close(f)


def test_p1_numbers(computed):
    df, meta = computed["p1"]
    info = meta["instances"][0]
    assert info["seed"] == 1 and info["rank_nuc"] == 2 and info["rank_frob"] == 3
    last = df[df.t == 5000].set_index("model")
    assert last.loc["kq", "corr_nuc"] > 0.999 and last.loc["kq", "ratio_nuc"] < 1.002
    assert last.loc["merged", "corr_frob"] > 0.9999 and last.loc["merged", "ratio_frob"] < 1.005
    # the risk keeps decreasing towards L* in log space for both models
    for model in ("kq", "merged"):
        ex = df[df.model == model].sort_values("t").log10_excess.to_numpy()
        assert np.all(np.diff(ex[5:]) < 0)


def test_p2_numbers(computed):
    df, meta = computed["p2"]
    info = meta["instances"][0]
    assert info["seed"] == 4 and info["l1_unique"] and info["support_l1"] == 4
    last = df[df.t == 12000].set_index("model")
    assert last.loc["xi", "ratio_l1"] < 1.001
    assert last.loc["beta", "ratio_l2"] < 1.01 and last.loc["beta", "ratio_l1"] > 1.2
    assert last.loc["xi", "support"] == 4 and last.loc["beta", "support"] == 10


def test_checks_can_fail(computed):
    df, meta = computed["p1"]
    bad = df.copy()
    bad.loc[bad.model == "kq", "corr_nuc"] = 0.9  # not converged to the nuclear-norm SVM
    failed = {c.id for c in nucnorm_claims.p1((bad, meta)) if not c.passed}
    assert {"B_corr_kq_nuc", "B_cross_kq"} <= failed
    df3, meta3 = computed["p3"]
    bad3 = df3.copy()
    locked = bad3.kind == "sign_locked"
    bad3.loc[locked, ["ratio_l1", "margin_ratio_l1", "corr_l1"]] = [
        1.0,
        1.0,
        1.0,
    ]  # as if it reached β*_ℓ1
    failed3 = {c.id for c in nucnorm_claims.p3((bad3, meta3)) if not c.passed}
    assert failed3 == {"sign_locked_margin_ratio", "sign_locked_corr"}
    df5, meta5 = computed["p5"]
    bad5 = df5.copy()
    bad5["rank_nuc"] = bad5["rank_frob"]
    assert not next(c for c in nucnorm_claims.p5((bad5, meta5)) if c.id == "rank_order").passed


def test_p3_stages_round_trip_through_their_files(tmp_path):
    """The workflow's path: the instance and SVM stages saved and loaded as .npz, then the
    trajectories, give what run_stages gives in one call; a selection that skipped a seed keeps
    its record (here corr_max = 0.9 rejects seed 1, whose two SVM solutions correlate 0.9108)."""
    from attnbias.experiments.nucnorm import diagonal
    from attnbias.io import load_arrays, save_arrays

    s = dict(settings("p3"), corr_max=0.9)
    data = ["n", "L", "d", "seed", "corr_max", "rank_tol_solver", "max_tries", "self_attention"]
    save_arrays(tmp_path / "i.npz", *diagonal.instance_p3(**{k: s[k] for k in data}))
    instance = load_arrays(tmp_path / "i.npz")
    save_arrays(tmp_path / "s.npz", *diagonal.svm_p3(instance))
    df, meta = diagonal.trajectories_p3(instance, load_arrays(tmp_path / "s.npz"), **s)
    ref_df, ref_meta = run_stages("nucnorm", "p3", s)
    assert df.equals(ref_df) and meta == ref_meta
    assert meta["seed"] == 2 and meta["requested_seed"] == 1
    assert meta["skipped"] == [[1, "full: corr of the two SVM solutions 0.9108 > 0.9"]]
