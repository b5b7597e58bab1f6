"""Parsing the workflow changes files only in the process the user started.  A cluster job
(Snakemake's remote mode) parses the whole workflow too, while other jobs may be rewriting their
data: there it must neither set products aside (results/stale/) nor write the closure cache."""

from conftest import copy_workflow, snakemake_cmd

FIGURE = "results/figures/maxmargin/fig1c.pdf"
CLAIMS = "results/claims/maxmargin/fig1c.json"
CACHE = ".snakemake/attnbias/closures.json"


def _stale_state(wf):
    """A figure and its claims in place while their data is missing (an interrupted run)."""
    for rel, text in ((FIGURE, "a figure"), (CLAIMS, "{}")):
        (wf / rel).parent.mkdir(parents=True, exist_ok=True)
        (wf / rel).write_text(text)
    assert not (wf / "results/data/maxmargin/fig1.csv").exists()


def test_a_cluster_jobs_parse_moves_and_writes_nothing(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    _stale_state(wf)
    res = snakemake_cmd("--mode", "remote", "-n", "maxmargin_fig1c", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (wf / FIGURE).read_text() == "a figure" and (wf / CLAIMS).exists()
    assert not (wf / "results/stale").exists()
    assert not (wf / CACHE).exists()
    # the process the user starts does both (the twin that shows the check can fail)
    res = snakemake_cmd("-n", "maxmargin_fig1c", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not (wf / FIGURE).exists() and (wf / "results/stale" / FIGURE).exists()
    assert "set aside under results/stale/" in res.stderr
    assert (wf / CACHE).exists()
