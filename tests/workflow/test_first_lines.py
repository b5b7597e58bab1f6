"""The first lines a person reads (stdout and stderr, in the order printed) answer a mistake, and
say what a robustness or control run costs; a valid dry run prints nothing more than before.

Snakemake reads ``--config`` and ``--configfile`` before the Snakefile, so for a dotted key or a
missing file the workflow cannot speak first: the test pins that boundary and the checker's
one-line answer (docs/configuration.md, "When a command is mistyped")."""

import os
import re
import subprocess

import pytest
from conftest import BIN, copy_workflow

from attnbias.estimates import Costs
from attnbias.hints import CONTROL_NOTE

PROFILE = (
    "Using workflow specific profile profiles/default for setting default command line arguments."
)


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("first_lines") / "wf")


def lines(wf, *args, tool="snakemake"):
    """The output of ``tool args`` in ``wf`` as one stream, in the order printed."""
    cmd = [str(BIN / tool), *args]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(
        cmd, cwd=wf, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        env=env,
    )  # fmt: skip
    return res.returncode, res.stdout.splitlines()


def test_a_mistyped_target_is_answered_in_the_first_lines(wf):
    rc, out = lines(wf, "-n", "--nolock", "maxmargin_fig1")
    assert rc != 0
    assert out[0] == PROFILE
    assert out[1].startswith("maxmargin_fig1 is not a target; the targets starting with it: ")
    assert "--list-target-rules" in out[2]


def test_what_snakemake_reads_first_stops_before_the_workflow(wf):
    """A dotted --config key and a missing --configfile: Snakemake's traceback, nothing of the
    workflow's; the checker answers each in its first line."""
    for args, last, answer in [
        (("--config", "maxmargin.fig1.steps=500"),
         "Config entry must start with a valid identifier",
         "write  --config maxmargin='{fig1: {steps: 500}}'"),
        (("--configfile", "nope.yaml"),
         "No such file or directory: 'nope.yaml'",
         "nope.yaml: cannot read it: No such file or directory"),
    ]:  # fmt: skip
        rc, out = lines(wf, "-n", "--nolock", *args)
        assert rc != 0 and out[1] == "Traceback (most recent call last):", out[:3]
        assert last in [line for line in out if line.strip()][-1]
        assert "Building DAG" not in "\n".join(out)  # the Snakefile was never read
        rc, out = lines(wf, "-m", "attnbias.config_rules", *args, tool="python")
        assert rc == 1 and len(out) == 1 and answer in out[0], out


def test_a_valid_dry_run_prints_nothing_more(wf):
    cmd = [str(BIN / "snakemake"), "-n", "--nolock", "maxmargin_fig1c"]
    res = subprocess.run(cmd, cwd=wf, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stderr.splitlines() == [PROFILE]
    assert "not a target" not in res.stdout and "robustness:" not in res.stdout


def test_robustness_and_the_control_say_their_cost_first(wf):
    rc, out = lines(wf, "-n", "--nolock", "robustness", "--config", "control=null")
    assert rc == 0, out[-20:]
    head = out[:4]
    assert [line for line in out if line.startswith("robustness: each of")] == head[2:3], head
    # the estimates come from the committed cost table (workflow/costs/, attnbias.estimates)
    source = Costs.load(wf).source()
    assert re.search(r"about [\d.]+ (s|min) for the 4 seed shifts on 2", head[2]), head[2]
    assert source in head[2], head[2]
    assert sum(CONTROL_NOTE in line for line in out) == 1 and head[3].startswith(CONTROL_NOTE)
    assert "its run: 12 figures" in head[3] and source in head[3], head[3]
