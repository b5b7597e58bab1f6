"""Each preset, negative control, seed shift and override of the settings has its own results
folder (README "Outputs"), so switching and switching back recomputes nothing, and the default
run's files stay as they were (overrides in detail: test_overrides.py)."""

import pytest
from conftest import copy_workflow, snakemake_cmd

from attnbias.layout import results_root


@pytest.mark.parametrize(
    "scale, control, seed, override, folder",
    [
        ("quick", "none", 0, "", "results"),
        ("paper", "none", 0, "", "results/paper"),
        ("quick", "null", 0, "", "results/control-null"),
        ("quick", "none", 3, "", "results/seed-3"),
        ("paper", "null", 2, "", "results/paper/control-null/seed-2"),
        ("quick", "none", 0, "maxmargin.fig1.steps-500", "results/custom/maxmargin.fig1.steps-500"),
        ("paper", "none", 1, "x", "results/paper/custom/x/seed-1"),
    ],
)
def test_results_root(scale, control, seed, override, folder):
    assert results_root(scale, control, seed, override) == folder


def _state(root):
    """Every file under results/ with its modification time."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_switching_preset_seed_or_settings_and_back_recomputes_nothing(tmp_path):
    d = copy_workflow(tmp_path / "wf")
    target = "maxmargin_fig1c"
    switches = [
        [],
        ["--config", "scale=paper"],
        ["--config", "seed=1"],
        ["--config", "maxmargin={fig1: {lr: 0.2}}"],
    ]
    snakemake_cmd("--cores", "2", target, cwd=d, check=True)
    default = _state(d / "results")
    assert "data/maxmargin/fig1.csv" in default
    for switch in switches[1:]:
        snakemake_cmd("--cores", "2", target, *switch, cwd=d, check=True)
    paper, seed = d / "results/paper", d / "results/seed-1"
    assert (paper / "figures/maxmargin/fig1c.pdf").exists()
    assert (seed / "data/maxmargin/fig1.csv").exists()
    assert (d / "results/custom/maxmargin.fig1.lr-0.2/claims/maxmargin/fig1c.json").exists()
    # the default run's files are untouched by the other runs ...
    now = _state(d / "results")
    assert {k: now[k] for k in default} == default
    # ... and going back to any of the four finds it up to date
    for switch in switches:
        res = snakemake_cmd("-n", "--cores", "1", target, *switch, cwd=d, check=True)
        assert "Nothing to be done" in res.stdout + res.stderr, (switch, res.stdout[-2000:])
