"""Code tracking: every job's `code=` input is the import closure of the function it runs
(attnbias.closure, computed when the workflow is parsed), so an edit reruns exactly the jobs
whose code imports the edited module.

A private copy of the workflow is given the state of a finished run without running anything
(every output of `all` created and marked done with `--touch`); then one module is edited (a
comment appended: Snakemake 9 compares the checksums of small inputs it has metadata for, so
a bare `touch` of a tracked module may rerun nothing) and a dry run shows what is out of
date.  Jobs are recognised by their outputs
(results/data/...: computations, trainings, gathers; results/figures/...: plots)."""

import os
import re
import time

import pytest
from conftest import copy_workflow, snakemake_cmd


def planned_outputs(res) -> set[str]:
    return {
        f.strip()
        for m in re.finditer(r"^\s+output: (.*)$", res.stdout + res.stderr, re.M)
        for f in m[1].split(",")
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A copy of the workflow in the state of a finished `all` (nothing ran: outputs touched)."""
    d = copy_workflow(tmp_path_factory.mktemp("code") / "wf")
    plan = snakemake_cmd("-n", "--forceall", "--cores", "1", "all", cwd=d, check=True)
    # a `train` or `extend` job's output is a folder (its runs' files)
    train = r"^rule (?:train|extend):\n(?:\s+input: .*\n)?\s+output: (.*)$"
    folders = set(re.findall(train, plan.stdout, re.M))
    assert folders
    for f in planned_outputs(plan):
        if f in folders:
            (d / f).mkdir(parents=True, exist_ok=True)
        else:
            (d / f).parent.mkdir(parents=True, exist_ok=True)
            (d / f).touch()
    return d


def out_of_date_after_editing(d, module: str) -> set[str]:
    """The outputs `snakemake -n all` would rebuild after an edit of src/attnbias/<module>."""
    snakemake_cmd("--touch", "--cores", "1", "all", cwd=d, check=True)
    nothing = snakemake_cmd("-n", "--cores", "1", "all", cwd=d, check=True)
    assert "Nothing to be done" in nothing.stdout + nothing.stderr
    path = d / "src" / "attnbias" / module
    path.write_text(path.read_text() + "\n# an edit\n")
    later = time.time() + 5  # newer than every output, whatever the clock's resolution
    os.utime(path, (later, later))
    out = planned_outputs(snakemake_cmd("-n", "--cores", "1", "all", cwd=d, check=True))
    # back to the present: the next test's `--touch` must not find an input from the future
    # (Snakemake stops on it as a clock skew when the tests follow each other within 5 s)
    now = time.time() - 1
    os.utime(path, (now, now))
    return out


def test_editing_metrics_core_reruns_the_maxmargin_computation(finished):
    out = out_of_date_after_editing(finished, "metrics/core.py")
    # experiments/maxmargin/study.py (Figs 9-10) imports metrics.core (the hand-kept list of the
    # old single module missed it)
    assert "results/data/maxmargin/fig9.csv" in out
    assert "results/figures/maxmargin/fig9a.pdf" in out  # and everything downstream
    res = snakemake_cmd("-n", "--cores", "1", "maxmargin_fig9a", cwd=finished, check=True)
    assert "results/data/maxmargin/fig9.csv" in planned_outputs(res)
    assert "Updated input files: src/attnbias/metrics/core.py" in res.stdout


def test_editing_a_plotting_module_reruns_plots_only(finished):
    out = out_of_date_after_editing(finished, "plotting/maxmargin.py")
    assert "results/figures/maxmargin/fig1c.pdf" in out
    assert not {f for f in out if f.startswith("results/data/")}, sorted(out)
    assert not {f for f in out if f.startswith("results/figures/") and "/maxmargin/" not in f}


def test_editing_the_training_engine_reruns_no_synthetic_computation(finished):
    out = out_of_date_after_editing(finished, "train/engine.py")
    assert "results/data/maxmargin/fig6.csv" in out  # the ViT run trains with it
    assert "results/data/maxmargin/fig1.csv" not in out
    assert "results/data/nucnorm/p1.csv" not in out
