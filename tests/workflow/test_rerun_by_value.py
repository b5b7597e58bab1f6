"""Nothing a user ran is redone needlessly: settings compare by value, results are portable.

One real small target (``maxmargin_fig1c``: its compute, claim and plot jobs) runs in a private
copy of the workflow, in each preset.  Then:

- a ``--configfile`` restating a setting at its current value schedules nothing, and a value
  changed in config.yaml (the reference run's settings; as a ``--configfile`` it would be a run
  of its own, test_overrides.py) schedules exactly that figure's jobs, with "Params have changed"
  as the compute job's reason (both presets);
- ``results/`` and ``.snakemake/`` copied into a second copy of the sources whose files are all
  newer (a fresh clone of the same commit, or another machine) are up to date;
- a real edit of a module the compute job runs makes it out of date there; a bare ``touch`` does
  not.
"""

import os
import re
import shutil
import time

import pytest
from conftest import clone_run, copy_workflow, set_reference, snakemake_cmd

TARGET = "maxmargin_fig1c"


def planned(res) -> list[str]:
    """The rule names of the jobs a dry run schedules (empty when nothing is to be done)."""
    text = res.stdout + res.stderr
    if "Nothing to be done" in text:
        return []
    return re.findall(r"^(?:local)?rule (\w+):", text, re.M)


def dry(checkout, *args):
    return snakemake_cmd("-n", "--cores", "1", TARGET, *args, cwd=checkout, check=True)


def fig1_override(tmp_path, name, lr) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"maxmargin:\n  fig1:\n    lr: {lr}\n")
    return str(path)


@pytest.fixture(scope="module")
def finished(finished_fig1c, tmp_path_factory):
    """A copy of the workflow in which ``maxmargin_fig1c`` really ran (quick preset): a clone of
    the session's (:func:`conftest.finished_fig1c`)."""
    return clone_run(finished_fig1c, tmp_path_factory.mktemp("finished") / "checkout")


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["quick", "paper"])
def test_a_restated_setting_reruns_nothing_and_a_changed_one_reruns_its_jobs(
    finished, tmp_path, preset
):
    import yaml

    cfg = yaml.safe_load((finished / "config.yaml").read_text())
    lr = cfg["maxmargin"]["fig1"]["lr"]
    scale = ["--config", f"scale={preset}"]
    if preset == "paper":  # the paper preset's own run of the target
        snakemake_cmd("--cores", "2", TARGET, *scale, cwd=finished, check=True, timeout=900)
    assert planned(dry(finished, *scale)) == []

    same = dry(finished, "--configfile", fig1_override(tmp_path, "same", lr), *scale)
    assert planned(same) == [], same.stdout[-3000:]

    try:  # the setting edited in config.yaml
        set_reference(finished, {"maxmargin": {"fig1": {"lr": 2 * lr}}})
        other = dry(finished, *scale)
    finally:
        set_reference(finished)
    jobs = sorted(j for j in planned(other) if j != TARGET)  # the target alias is no job
    assert jobs == ["check", "compute", "plot"], jobs
    assert "Params have changed" in other.stdout + other.stderr


@pytest.mark.slow
def test_a_finished_run_copied_into_a_fresh_checkout_is_up_to_date(finished, tmp_path):
    # the quick preset's finished state (the parametrised test above may have run paper last)
    snakemake_cmd("--cores", "2", TARGET, cwd=finished, check=True, timeout=900)
    assert planned(dry(finished)) == []

    fresh = copy_workflow(tmp_path / "fresh", closures=False)  # a clone: no .snakemake/
    later = time.time() + 60  # every source file newer than every output: a fresh clone
    for path in fresh.rglob("*"):
        os.utime(path, (later, later))
    for name in ("results", ".snakemake"):
        shutil.copytree(finished / name, fresh / name, symlinks=True)  # copy2 keeps dates
    assert planned(dry(fresh)) == [], dry(fresh).stdout[-3000:]

    # a module the Fig 1 trajectories import (attnbias.closure: the compute job's code inputs)
    core = fresh / "src" / "attnbias" / "optim" / "fullbatch.py"
    os.utime(core, (later + 60, later + 60))  # a touch: same content
    assert planned(dry(fresh)) == []

    core.write_text(core.read_text() + "\n# an edit\n")
    edited = dry(fresh)
    assert any("compute" in j for j in planned(edited)), edited.stdout[-3000:]
    assert "Updated input files" in edited.stdout + edited.stderr
