"""One definition of a run (attnbias.run): the folder, settings and tables a configuration makes,
the rules' functions of the wildcards, and the errors that name their key.  That the Snakefile's
run equals the one built here is checked in tests/workflow/test_table_parse.py."""

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnbias.run import PER_ATTEMPT, RunError, load_run
from attnbias.workflow import PAPERS, SEED_STRIDE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run():
    return load_run(ROOT)


def wildcards(**kw):
    return SimpleNamespace(**kw)


def test_the_default_run(run):
    assert (run.scale, run.control, run.seed, run.override) == ("quick", "none", 0, "")
    assert run.results == run.uncontrolled == "results" and run.overrides == []
    assert run.shows() == dict(preset="quick", control="none", seed=0, folder="results")
    assert run.all_targets()[-2:] == ["results/claims/summary.md", "results/claims/summary.csv"]
    assert len(run.all_targets()) == 3 * len(run.table.figures) + 2


def test_a_changed_setting_is_a_custom_run_with_its_differences():
    custom = load_run(ROOT, config={"maxmargin": {"fig1": {"steps": 500}}})
    assert custom.results == "results/custom/maxmargin.fig1.steps-500"
    assert custom.overrides == [("maxmargin.fig1.steps", 1000, 500)]
    assert custom.shows()["overrides"] == ["maxmargin.fig1.steps = 500 (reference: 1000)"]
    assert custom.table.results == custom.results


def test_control_and_seed_have_their_own_folders():
    control = load_run(ROOT, config={"control": None})
    assert control.control == "null" and control.uncontrolled == "results"
    assert control.results != "results" and control.results.startswith("results")
    shifted = load_run(ROOT, config={"seed": 2})
    assert shifted.results == "results/seed-2" and shifted.folder(seed=0) == "results"
    # the settings every seed run gets are the unshifted ones
    vit = ("maxmargin", "vit")
    assert shifted.given["maxmargin"]["vit"]["seeds"] == [0, 1, 2]
    assert shifted.config["maxmargin"]["vit"]["seeds"] == [s + 2 * SEED_STRIDE for s in (0, 1, 2)]
    assert shifted.table.sweeps[vit].points and "seed" not in shifted.given


def test_settings_from_the_command_line_are_typed_and_refused_by_key():
    assert load_run(ROOT, config={"claims_strict": "yes"}).config["claims_strict"] is True
    with pytest.raises(RunError, match=r"maxmargin\.fig1\.steps"):
        load_run(ROOT, config={"maxmargin": {"fig1": {"steps": -3}}})
    with pytest.raises(RunError, match="robustness.figures: unknown figure"):
        load_run(ROOT, config={"robustness": {"figures": ["maxmargin/fig99"]}})


def test_resources_grow_with_the_attempt_and_a_batch_runs_in_turn(run):
    assert PER_ATTEMPT == ("mem_mb", "runtime")
    compute = wildcards(entry="maxmargin/fig1")
    entry = run.table.computes[("maxmargin", "fig1")]
    assert isinstance(entry.runtime, int) and isinstance(entry.mem_mb, int)
    assert run.resource("compute", "mem_mb")(compute, 3) == 3 * entry.mem_mb
    assert run.threads("compute")(compute) == entry.threads
    (paper, sweep, batch), s = next(iter(run.entries("train").items()))
    train = wildcards(entry=f"{paper}/{sweep}/{batch}", root="results")
    runs = len(s.batches[batch])
    assert run.job_runs(train) == runs
    assert run.resource("train", "runtime")(train, 2) == 2 * runs * s.resources["runtime"]
    assert run.resource("train", "gpu")(train, 1) == (1 if s.gpu else 0)
    assert len(run.batch_runs(train)) == runs


def test_each_rule_matches_only_its_own_entries(run):
    import re

    compute, gather = run.constraint("compute"), run.constraint("gather")
    assert re.fullmatch(compute, "maxmargin/fig1") and not re.fullmatch(gather, "maxmargin/fig1")
    assert re.fullmatch(run.constraint("figure"), "lowrank/fig2")
    assert not re.fullmatch(run.constraint("figure"), "lowrank/fig2x")


def test_the_paper_list_is_written_once():
    """No module of the package spells the four papers as a list of its own: they are
    attnbias.workflow.PAPERS (with their titles)."""
    spelled = []
    for path in sorted((ROOT / "src" / "attnbias").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if set(PAPERS) <= names:
                    spelled.append(str(path.relative_to(ROOT)))
    assert spelled == []


def test_the_rule_files_are_rules():
    """The .smk files hold rules and the few Snakemake-only switches (issue #47's budget)."""
    rules = sorted((ROOT / "workflow" / "rules").glob("*.smk"))
    text = [p.read_text() for p in rules]
    assert sum(t.count("\n") for t in text) <= 900
    assert sum(t.count("lambda wildcards") for t in text) <= 10


def test_what_a_run_changes_and_says_it_is():
    custom = load_run(ROOT, config={"maxmargin": {"fig1": {"steps": 500}}})
    assert custom.label() == "custom: maxmargin.fig1.steps 500, default 1000"
    assert custom.run_note()["overrides"] == [
        {"setting": "maxmargin.fig1.steps", "default": 1000, "used": 500}
    ]
    assert custom.touched == [("maxmargin", f) for f in ("fig1a", "fig1b", "fig1c")]
    assert custom.shows()["label"] == custom.label()
    shifted = load_run(ROOT, config={"seed": 2})
    assert shifted.label() == "seed shift 2" and shifted.run_note() == {
        "label": "seed shift 2", "seed": 2
    }
    # the figures a seed shift touches are those the robustness table reruns (decided apart)
    redrawn = [tuple(k.split("/")) for k, r in shifted.robustness.figures.items() if r]
    assert shifted.touched == redrawn
    control = load_run(ROOT, config={"control": None})
    assert control.run_note() == {} and control.changes() == [
        {"setting": "control", "default": "none", "used": "null"}
    ]
    assert set(control.touched) == set(control.shown_figures())


def test_the_reference_run_changes_nothing(run):
    assert run.is_reference() and run.label() == "" and run.run_note() == {}
    assert run.touched == [] and run.summary_figures() == run.shown_figures()
    assert "label" not in run.shows()


def test_compare_can_be_restricted_to_figures():
    one = load_run(ROOT, config={"seed": 1, "compare": {"figures": ["lowrank/fig1"]}})
    assert one.touched == [("lowrank", "fig1")]
    with pytest.raises(RunError, match="compare.figures: unknown figure"):
        load_run(ROOT, config={"compare": {"figures": ["lowrank/fig99"]}})
