"""A training job killed with SIGKILL mid-run resumes from its undeclared checkpoint when the
workflow is rerun, and ends with the same final metrics as an uninterrupted run (CPU)."""

import os
import signal
import subprocess
import time

import pandas as pd
import pytest
import torch
from conftest import BIN, ci_configfiles, ci_copy, session_uses, set_reference, snakemake_cmd

TARGET = "results/data/maxmargin/fig7.csv"
CKPT = "results/scratch/maxmargin_vit_train/quick/seed0/checkpoint.pt"


def _checkpoint_epoch(path):
    try:
        return torch.load(path, weights_only=False)["row"]  # the epoch here
    except (FileNotFoundError, EOFError, RuntimeError):
        return -1


def _sigkill_snakemake_once(cwd, args, ready, what, poll=0.2):
    """Run snakemake ``args`` in ``cwd`` and SIGKILL its whole process group as soon as
    ``ready()`` is true; fails if the run ends first or ``what`` never appears."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), *map(str, args)], cwd=cwd, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.time() + 600
        while not ready():
            assert proc.poll() is None, (
                f"the run finished before {what} could be killed; make the CI run longer"
            )
            assert time.time() < deadline, f"no {what} appeared"
            time.sleep(poll)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def uninterrupted(request, tmp_path):
    """The table of an uninterrupted run of TARGET at the CI configuration: the session's
    end-to-end run made it (:func:`conftest.quick_run`, the same job and settings) when the session
    runs it anyway, else a run of TARGET alone in a fresh copy."""
    if session_uses(request, "quick_run"):
        return pd.read_csv(request.getfixturevalue("quick_run") / TARGET)
    clean = ci_copy(tmp_path / "clean")
    res = snakemake_cmd(
        "--cores", "2", TARGET, "--configfile", *ci_configfiles(clean), cwd=clean, timeout=900
    )
    assert res.returncode == 0, res.stderr[-4000:]
    return pd.read_csv(clean / TARGET)


def test_sigkill_then_resume_matches_uninterrupted(tmp_path, uninterrupted):
    killed = ci_copy(tmp_path / "killed")
    args = ["--cores", "2", TARGET, "--configfile", *ci_configfiles(killed)]
    _sigkill_snakemake_once(
        killed, args, lambda: _checkpoint_epoch(killed / CKPT) >= 2, "a checkpoint at epoch 2"
    )
    epoch_at_kill = _checkpoint_epoch(killed / CKPT)
    assert not (killed / TARGET).exists()

    # Snakemake itself was killed, so its lock is stale: unlock, as a user would, and rerun
    assert snakemake_cmd("--unlock", *args[2:], cwd=killed).returncode == 0
    res = snakemake_cmd(*args, "--rerun-incomplete", cwd=killed, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    log = (killed / "results/logs/train/maxmargin/vit/seed0.log").read_text()
    assert f"resumed from {CKPT} at epoch {epoch_at_kill}" in log
    assert not (killed / CKPT).exists()  # a finished run's checkpoint is dropped (no stale resume)

    pd.testing.assert_frame_equal(pd.read_csv(killed / TARGET), uninterrupted)


def test_a_batched_job_killed_at_its_second_run_keeps_the_first(tmp_path):
    """A quick-preset batched job (fastrates Fig 7, SGD: its 3 grid values in turn, one seed)
    killed while training its second run reuses the first run's kept tables on the rerun instead
    of retraining, writes all three run files, and drops every run's resume state."""
    short = tmp_path / "short_fig7.yaml"
    # SGD's quick grid of three values (the CI configuration trains two of them)
    grid = "optimizers: {sgd: {grid: [0.05, 0.15, 0.5]}}"
    short.write_text(f"fastrates:\n  fig7: {{epochs: 6, seeds: [0], {grid}}}\n")
    d = set_reference(ci_copy(tmp_path / "batched"), *ci_configfiles(), short)  # in results/
    target = "results/data/fastrates/fig7/optsgd"  # the job's folder: the runs of all 3 values
    scratch = d / "results/scratch/fastrates_fig7_train/quick"
    kept = scratch / "optsgd_lr0.05_seed0/finished/settings.json"
    args = ["--cores", "1", target, "--configfile", *ci_configfiles(d), short]
    _sigkill_snakemake_once(d, args, kept.exists, "the first run's kept tables", poll=0.05)
    first = pd.read_csv(kept.parent / "csv.csv")
    assert snakemake_cmd("--unlock", *args[2:], cwd=d).returncode == 0
    res = snakemake_cmd(*args, "--rerun-incomplete", cwd=d, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    log = (d / "results/logs/train/fastrates/fig7/optsgd.log").read_text()
    assert log.count("reused the finished run's tables") == 1
    assert log.count("training fastrates.train_image") == 2
    pd.testing.assert_frame_equal(
        pd.read_csv(d / target / "optsgd_lr0.05_seed0.csv"), first
    )
    for lr in ("0.05", "0.15", "0.5"):
        assert (d / target / f"optsgd_lr{lr}_seed0.json").exists()
    assert not list(scratch.rglob("finished")) and not list(scratch.rglob("checkpoint.pt"))
