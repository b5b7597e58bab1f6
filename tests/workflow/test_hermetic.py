"""The suite is hermetic: it passes in a checkout that holds a finished run, and leaves it alone.

A user follows the README: command 1 runs the workflow, command 2 runs the tests in the same
checkout.  Here a copy of the workflow plays that checkout: one small target really runs, and
every other output of ``all`` is marked done (``--touch``), so ``snakemake -n all`` in the
checkout itself says "Nothing to be done" and the paper-preset GPU figures need no precomputed
files.  The workflow tests that look at the DAG then run *inside that checkout* (its own copy of
the test suite) and must pass, and its ``results/`` and ``.snakemake/`` must come out unchanged.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import clone_run, snakemake_cmd, tree_state

# The DAG-state tests: each gave a different answer in a checkout with a finished run before the
# suite ran its dry runs in a private copy (the per-figure ones use --forceall anyway).
DAG_TESTS = " or ".join(
    [
        "test_dry_run_all_default_config",
        "test_precomputed_paper_without_committed_results_is_a_clear_error",
        "test_precomputed_quick_trains_on_cpu",
        "test_paper_targets_dry_run",
        "test_registry_has_every_maxmargin_figure",
    ]
)


def finish_run(checkout: Path) -> None:
    """Give ``checkout``, in which a real small target ran (``maxmargin_fig1c``), the state of a
    finished ``all``: the rest touched."""
    plan = snakemake_cmd("-n", "--forceall", "--cores", "1", "all", cwd=checkout, check=True)
    outputs = {
        f.strip()
        for m in re.finditer(r"^\s+output: (.*)$", plan.stdout, re.M)
        for f in m[1].split(",")
    }
    # a `train` or `extend` job's output is a folder (its runs' files)
    folder_rule = r"^rule (?:train|extend):\n(?:\s+input: .*\n)?\s+output: (.*)$"
    folders = set(re.findall(folder_rule, plan.stdout, re.M))
    for f in outputs:
        path = checkout / f
        if not path.exists() and f in folders:
            path.mkdir(parents=True)
        elif not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    snakemake_cmd("--touch", "--cores", "1", "all", cwd=checkout, check=True)


@pytest.mark.slow
def test_suite_passes_beside_a_finished_run_and_leaves_it_alone(finished_fig1c, tmp_path):
    checkout = clone_run(finished_fig1c, tmp_path / "checkout")
    finish_run(checkout)
    nothing = snakemake_cmd("-n", "--cores", "1", "all", cwd=checkout, check=True)
    assert "Nothing to be done" in nothing.stdout + nothing.stderr  # the state that broke tests
    before = tree_state(checkout)
    assert any(k.startswith(".snakemake/") for k in before) and len(before) > 300

    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-k", DAG_TESTS,
         "tests/workflow/test_dag.py"],
        cwd=checkout, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert re.search(r"\b5 passed\b", res.stdout), res.stdout[-2000:]
    assert tree_state(checkout) == before
