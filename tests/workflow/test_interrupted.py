"""An interrupted run leaves a state the next plain run repairs; nothing stale looks current.

A finished ``maxmargin_fig1c`` (compute, claim, plot) in a private copy of the workflow; then a
forced recompute of its data is interrupted while the compute job runs: Snakemake has deleted the
job's declared outputs, so the old figure and claim file stand without their data.  Before the
fix a dry run then said "Nothing to be done".  Now the next plain run rebuilds the data and
everything made from it, and the one after it has nothing to do.

- SIGINT (Ctrl-C) of Snakemake: it stops the job and removes its incomplete outputs.
- SIGKILL of Snakemake: its running job is left to finish on its own; the directory stays locked
  until ``snakemake --unlock`` (README, "After an interruption").
"""

import os
import signal
import subprocess
import time

import pytest
from conftest import BIN, clone_run, set_reference, snakemake_cmd

TARGET = "maxmargin_fig1c"
DATA = "results/data/maxmargin/fig1.csv"
PRODUCTS = ["results/figures/maxmargin/fig1c.pdf", "results/claims/maxmargin/fig1c.json"]
# The interrupted recompute runs 10 × the default steps (≈ 5 s instead of 0.5 s): the signal comes
# once the job has reached its function, and the job must still be running then.  It is the
# checkout's config.yaml for that run (as a --config override it would run in a folder of its own);
# the plain runs after it use the default config, under which the interrupted data is missing
# (SIGINT) or stale (SIGKILL).
SLOW = {"maxmargin": {"fig1": {"steps": 10000}}}
LOG = "results/logs/compute/maxmargin/fig1.log"


def nothing_to_do(checkout) -> bool:
    res = snakemake_cmd("-n", "--cores", "1", TARGET, cwd=checkout, check=True)
    return "Nothing to be done" in res.stdout + res.stderr


def in_its_function(checkout) -> bool:
    """Whether the compute job has reached its function: the line every job logs there."""
    log = checkout / LOG
    return log.exists() and "start-up:" in log.read_text()


def default_sigint() -> None:
    """SIGINT's default action in the Snakemake process, as in a terminal.  A process inherits an
    ignored SIGINT (a test run started in the background by a non-interactive shell has one, and
    so does every process it starts), and Python then installs no KeyboardInterrupt handler: the
    signalled run would finish as if never signalled."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_forced_recompute(checkout, sig) -> None:
    """Start ``-R <data> <target>`` (at :data:`SLOW`) and, once the compute job runs its function
    (its declared outputs are gone), send ``sig``: SIGINT to the whole process group, as Ctrl-C in
    a terminal does; SIGKILL to the Snakemake process alone.  Waiting for the job's own log line
    replaces a fixed 0.5-s wait after the outputs went, which guessed when the job was running."""
    (checkout / LOG).unlink()  # the finished run's; the interrupted job writes its own
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    set_reference(checkout, SLOW)
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--cores", "1", "-R", DATA, "--", TARGET],
        cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=default_sigint,
    )  # fmt: skip
    deadline = time.time() + 300
    while not in_its_function(checkout) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the forced recompute ended before it could be interrupted"
    assert in_its_function(checkout) and not (checkout / DATA).exists()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    proc.wait(timeout=120)
    set_reference(checkout)  # the default config again


@pytest.fixture
def finished(finished_fig1c, tmp_path):
    checkout = clone_run(finished_fig1c, tmp_path / "checkout")  # the session's finished target
    assert nothing_to_do(checkout)
    return checkout


@pytest.mark.slow
def test_sigint_during_a_forced_recompute(finished):
    interrupt_forced_recompute(finished, signal.SIGINT)
    assert not (finished / DATA).exists() and all((finished / p).exists() for p in PRODUCTS)
    assert not nothing_to_do(finished)  # the old figure is not taken as current

    snakemake_cmd("--cores", "1", TARGET, cwd=finished, check=True, timeout=900)
    data_time = (finished / DATA).stat().st_mtime
    assert all((finished / p).stat().st_mtime >= data_time for p in PRODUCTS)
    assert nothing_to_do(finished)


@pytest.mark.slow
def test_sigkill_of_snakemake_during_a_forced_recompute(finished):
    interrupt_forced_recompute(finished, signal.SIGKILL)
    # the orphaned job runs on; wait until it is done (it writes the data, Snakemake never marks it)
    deadline = time.time() + 300
    while not (finished / DATA).with_suffix(".json").exists() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    locked = snakemake_cmd("--cores", "1", TARGET, cwd=finished)
    assert locked.returncode != 0 and "unlock" in (locked.stdout + locked.stderr).lower()
    snakemake_cmd("--unlock", cwd=finished, check=True)

    snakemake_cmd("--cores", "1", TARGET, cwd=finished, check=True, timeout=900)
    assert all((finished / p).exists() for p in [DATA, *PRODUCTS])
    assert nothing_to_do(finished)
