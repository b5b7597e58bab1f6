"""`snakemake compare`: a run with a changed setting (or a seed shift) beside the reference run.
Only the figures the change touches are built in the other run's folder; their claims are joined
by id (ids carry no setting values), values and verdicts side by side; the reference run's files
are left as they were; the other run says what it is in its figures, captions, claim files and
summary, and a summary of its folder covers only what is built there."""

import hashlib
import json

import pandas as pd
import pytest
from conftest import copy_workflow, snakemake_cmd

STEPS = "maxmargin={fig1: {steps: 500}}"
CUSTOM = "results/custom/maxmargin.fig1.steps-500"
FIG1 = ["maxmargin_fig1a", "maxmargin_fig1b", "maxmargin_fig1c"]


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    """A workflow copy whose reference run has built maxmargin Fig 1 and lowrank Fig 1."""
    wf = copy_workflow(tmp_path_factory.mktemp("compare") / "wf")
    snakemake_cmd("--cores", "2", *FIG1, "lowrank_fig1", cwd=wf, check=True)
    return wf


def _claims(path) -> dict:
    return {c["id"]: c for c in json.loads(path.read_text())["claims"]}


def _state(folder) -> dict:
    """Every file of the reference run's folder (not the other runs' inside it): hash, time."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "custom" not in p.parts and "seed-1" not in p.parts
    }


def test_a_changed_setting_beside_the_reference(wf):
    reference = _state(wf / "results")
    snakemake_cmd("--cores", "2", "compare", "--config", STEPS, cwd=wf, check=True)
    assert _state(wf / "results") == reference  # the reference run untouched
    custom = wf / CUSTOM
    # only the figures the change touches are built there
    built = sorted(p.name for p in (custom / "figures" / "maxmargin").glob("*.png"))
    assert built == ["fig1a.png", "fig1b.png", "fig1c.png"]
    assert sorted(p.name for p in (custom / "data").rglob("*.csv")) == ["fig1.csv"]
    assert not (custom / "figures" / "lowrank").exists()
    # the claims side by side under one id; the value of t is in the statement, not the id
    df = pd.read_csv(custom / "compare.csv", keep_default_na=False)
    assert set(df.figure) == {"fig1a", "fig1b", "fig1c"}
    row = df[(df.figure == "fig1c") & (df.claim == "cos_gmm_final")].iloc[0]
    ref = _claims(wf / "results/claims/maxmargin/fig1c.json")
    other = _claims(custom / "claims/maxmargin/fig1c.json")
    assert row.reference_verdict == ref["cos_gmm_final"]["verdict"]
    assert row.other_verdict == other["cos_gmm_final"]["verdict"]
    assert other["cos_gmm_final"]["value"] != ref["cos_gmm_final"]["value"]
    assert row.reference_value == f"{ref['cos_gmm_final']['value']:.6g}"
    assert row.other_value == f"{other['cos_gmm_final']['value']:.6g}"
    assert "500" in other["cos_gmm_final"]["statement"]
    assert "1000" in ref["cos_gmm_final"]["statement"]
    assert df.verdict_changed.dtype == bool
    assert json.loads((custom / "compare.json").read_text())["changes"] == [
        {"setting": "maxmargin.fig1.steps", "default": 1000, "used": 500}
    ]
    md = (custom / "compare.md").read_text()
    assert md.splitlines()[4] == "- `maxmargin.fig1.steps`: 1000 → **500**"  # the change first
    assert (custom / "compare" / "maxmargin" / "fig1c.png").exists()
    # the custom run says what it is: claim file, caption (figure title: tests/unit/test_run.py)
    assert other["cos_gmm_final"] and json.loads(
        (custom / "claims/maxmargin/fig1c.json").read_text()
    )["overrides"] == [{"setting": "maxmargin.fig1.steps", "default": 1000, "used": 500}]
    caption = (custom / "figures/maxmargin/fig1c.rst").read_text()
    assert "Not the reference run** (custom: maxmargin.fig1.steps 500, default 1000)" in caption
    assert "overrides" not in json.loads((wf / "results/claims/maxmargin/fig1c.json").read_text())


def test_a_summary_of_the_custom_folder_covers_what_is_built_there(wf):
    # the same run named by a config file: its comparison is current, nothing to do
    (wf / "my.yaml").write_text("maxmargin: {fig1: {steps: 500}}\n")
    res = snakemake_cmd("--cores", "2", "compare", "--configfile", "my.yaml", cwd=wf, check=True)
    assert "Nothing to be done" in res.stdout + res.stderr
    res = snakemake_cmd("--cores", "2", "checks", "--config", STEPS, cwd=wf, check=True)
    assert "rule compute" not in res.stderr + res.stdout  # nothing recomputed for it
    summary = pd.read_csv(wf / CUSTOM / "claims/summary.csv", keep_default_na=False)
    assert set(summary.figure) == {"fig1a", "fig1b", "fig1c"}
    landing = (wf / CUSTOM / "claims/landing.rst").read_text()
    assert "**This run: custom: maxmargin.fig1.steps 500, default 1000**" in landing


def test_a_seed_run_beside_the_reference(wf):
    reference = _state(wf / "results")
    compare = "compare={figures: [lowrank/fig1]}"
    snakemake_cmd("--cores", "2", "compare", "--config", "seed=1", compare, cwd=wf, check=True)
    assert _state(wf / "results") == reference
    df = pd.read_csv(wf / "results/seed-1/compare.csv", keep_default_na=False)
    assert set(df.figure) == {"fig1"} and set(df.paper) == {"lowrank"}
    assert (df.reference_verdict != "").all() and (df.other_verdict != "").all()
    assert json.loads((wf / "results/seed-1/compare.json").read_text())["label"] == "seed shift 1"


def test_another_folders_file_is_answered_with_its_settings(wf):
    res = snakemake_cmd("-n", f"{CUSTOM}/figures/maxmargin/fig1c.png", cwd=wf)
    assert res.returncode != 0
    first = res.stderr.strip().splitlines()[:4]
    assert any("--config maxmargin='{fig1: {steps: 500}}'" in line for line in first), first
    res = snakemake_cmd("-n", "compare", cwd=wf)
    assert res.returncode != 0 and "compare sets a run beside" in res.stderr
