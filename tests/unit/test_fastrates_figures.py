"""fastrates: every figure's computation at CI size passes its claims (docs/papers/fastrates.md),
and the checks can fail."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from attnbias.analysis.fastrates import rate_table, write_rate_table
from attnbias.claims import fastrates as fastrates_claims
from attnbias.plotting import fastrates as plots
from attnbias.table.stages import run_stages
from attnbias.workflow import load_config

GROUPS = {
    "fig2": ["fig2", "table1"],
    "fig3": ["fig3"],
    "fig5": ["fig5"],
    "fig8": ["fig8"],
    "fig9": ["fig9"],
    "fig10": ["fig10"],
}


def ci_settings():
    """The CI settings: tests/config/ci_fastrates.yaml over config.yaml, validated."""
    ci = ROOT / "tests" / "config" / "ci_fastrates.yaml"
    return load_config(ROOT, configfiles=[ci])["fastrates"]


@pytest.fixture(scope="module")
def computed():
    cfg = ci_settings()
    return {g: run_stages("fastrates", g, cfg[g]) for g in GROUPS}


@pytest.mark.parametrize("group", list(GROUPS))
def test_ci_claims_pass_and_figures_draw(computed, group):
    for fig in GROUPS[group]:
        claims = getattr(fastrates_claims, fig)(computed[group])
        failed = [(c.id, c.value, c.threshold) for c in claims if not c.passed]
        assert not failed, f"{fig}: {failed}"
        assert len(claims) >= 3
        plt.close(getattr(plots, fig)(computed[group]))


def test_fig2_numbers(computed):
    df, meta = computed["fig2"]
    ngd = df[(df.method == "ngd") & (df.t == 1000)]
    # from W₀ = 0, ‖W_t‖ ≤ ηt exactly, and the steps stay nearly parallel
    assert np.all(ngd.norm_W <= 1000.0 + 1e-9) and np.all(ngd.norm_W >= 990.0)
    np.testing.assert_allclose(meta["wmm_norm"], np.sqrt(10 * 5 / 6), atol=1e-9)
    gd = df[(df.method == "gd") & (df.t == 2000)]
    assert np.all(gd.norm_W < 25)  # logarithmic growth
    assert np.all(gd.log10_one_minus_corr > -2.5)  # GD is still far from W_mm
    assert np.all(ngd.log10_one_minus_corr < -5)
    tab = rate_table(df).set_index("method")
    assert tab.loc["ngd", "norm_rate"] == pytest.approx(1.0, abs=0.01)
    assert tab.loc["ngd", "align_loglog"] == pytest.approx(-2.0, abs=0.1)  # 1 − corr ∝ t⁻²


def test_fig3_joint_numbers(computed):
    df, meta = computed["fig3"]
    assert meta["normalize"] == "joint"
    at = df[df.t == 2000].set_index(["method", "seed"])
    assert np.all(at.loc["ngd"].norm_u >= 180) and np.all(at.loc["ngd"].norm_u <= 200 + 1e-9)
    assert np.all(at.loc["ngd"].sopt > 0.99)
    assert np.all(at.loc["gd"].sopt < 0.95)


def test_checks_fail_when_methods_are_swapped(computed):
    df, meta = computed["fig2"]
    swapped = df.copy()
    swapped["method"] = df.method.map({"gd": "ngd", "ngd": "gd", "polyak": "polyak"})
    # with the labels swapped, the run called "gd" is NGD's: the ordering claims must fail
    claims = {
        c.id: c for c in fastrates_claims.fig10((swapped.assign(lr=1.0), dict(meta, lrs=[1.0])))
    }
    assert not claims["ngd_beats_gd_eta_first"].passed
    tab_claims = {c.id: c for c in fastrates_claims.table1((swapped, meta))}
    assert not tab_claims["align_slope_ngd"].passed


def test_table1_files(computed, tmp_path):
    df, _ = computed["fig2"]
    tab = write_rate_table(df, tmp_path / "t.csv", tmp_path / "t.md")
    back = pd.read_csv(tmp_path / "t.csv")
    assert list(back.method) == ["gd", "ngd", "polyak"]
    assert back.norm_rate[1] == pytest.approx(tab.norm_rate[1], rel=1e-5)
    md = (tmp_path / "t.md").read_text()
    assert md.count("\n| ") == 4 and "proposal" in md  # header + GD, NGD, PS
