"""Parsing the workflow changes files only in a real run of the process the user started.  A
cluster job (Snakemake's remote mode) parses the whole workflow too, while other jobs may be
rewriting their data: there it must neither set products aside (results/stale/) nor write the
closure cache.  A dry run changes nothing either: it says what a run would set aside and lists the
jobs that run would do."""

import hashlib

from conftest import copy_workflow, job_outputs, snakemake_cmd

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
    wf = copy_workflow(tmp_path / "wf", closures=False)  # the cache not yet written
    _stale_state(wf)
    res = snakemake_cmd("--mode", "remote", "-n", "maxmargin_fig1c", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (wf / FIGURE).read_text() == "a figure" and (wf / CLAIMS).exists()
    assert not (wf / "results/stale").exists()
    assert not (wf / CACHE).exists()
    # a dry run of the user's process moves and writes nothing, and lists the rebuild
    before = _files(wf)
    res = snakemake_cmd("-n", "maxmargin_fig1c", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _files(wf) == before
    assert f"{FIGURE}: its data is missing" in res.stderr
    assert "this dry run moves nothing" in res.stderr
    assert "results/data/maxmargin/fig1.csv" in job_outputs(res.stdout, "compute")
    assert FIGURE in job_outputs(res.stdout, "plot")
    # a real run sets them aside, rebuilds them and writes the cache
    res = snakemake_cmd("--cores", "1", "maxmargin_fig1c", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (wf / "results/stale" / FIGURE).read_text() == "a figure"
    assert "set aside under results/stale/" in res.stderr
    assert (wf / FIGURE).read_bytes()[:4] == b"%PDF" and (wf / CACHE).exists()
    # and a dry run of everything, with results and the cache in place, changes no file
    before = _files(wf)
    res = snakemake_cmd("-n", "all", cwd=wf)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _files(wf) == before


def _files(wf) -> dict[str, tuple]:
    """Every file under the workflow copy (results/ and .snakemake/ included, the workflow's
    closure cache among them): its content's hash and modification time.  Not Snakemake's own
    I/O cache, which every dry run of Snakemake 9 stores (.snakemake/iocache/)."""
    return {
        str(p.relative_to(wf)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(wf.rglob("*"))
        if p.is_file() and p.parent.name != "iocache"
    }
