"""`snakemake robustness`: every claim measured across seeds, each seed run in its own results
folder (results/seed-N/) by a run of this workflow with `--config seed=N`.

A small robustness run (2 seeds × three cheap figures at the CI settings: two redrawn by the seed,
one deterministic) in a private copy: the summary's counts equal those read from the per-seed
claim files themselves, the deterministic figure is measured once, and the default run's
results/ is left exactly as it was (same files, bytes and dates)."""

import json
import zipfile

import pandas as pd
import pytest
from conftest import ci_configfiles, ci_copy, snakemake_cmd

from attnbias.claims.core import resolve

FIGURES = ["nucnorm/p4", "fastrates/fig3", "maxmargin/fig1c"]
REDRAWN = {"nucnorm/p4", "fastrates/fig3"}
SEEDS = [1, 2]


def default_state(d):
    """{path: (bytes, mtime_ns)} of the default run's results/, the seed folders and the robustness
    table left out."""
    root = d / "results"
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).parts[0].startswith(("seed-", "robustness"))
    }


@pytest.fixture(scope="module")
def robust(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("robustness")
    d = ci_copy(tmp / "wf")  # the CI settings are its reference run, in results/
    cfg = tmp / "robust.yaml"
    cfg.write_text(f"robustness: {{seeds: {SEEDS}, figures: {FIGURES}}}\n")
    args = ["--cores", "2", "--configfile", *ci_configfiles(d), cfg]
    claims = [f"results/claims/{f}.json" for f in FIGURES]
    snakemake_cmd(*claims, *args, cwd=d, check=True, timeout=900)
    before = default_state(d)
    res = snakemake_cmd("robustness", *args, cwd=d, timeout=1200)
    assert res.returncode == 0, res.stderr[-4000:]
    return d, before


def claim_docs(d, seed):
    folder = d / ("results" if seed == 0 else f"results/seed-{seed}")
    figures = FIGURES if seed == 0 else sorted(REDRAWN)
    return [json.loads((folder / f"claims/{f}.json").read_text()) for f in figures]


def test_the_summary_counts_equal_the_per_seed_claim_files(robust):
    d, _ = robust
    table = pd.read_csv(d / "results/robustness/summary.csv", keep_default_na=False)
    verdicts, outcomes = {}, {}
    for seed in [0, *SEEDS]:
        for doc in claim_docs(d, seed):
            for c in doc["claims"]:
                key = (doc["paper"], doc["figure"], c["id"])
                verdicts.setdefault(key, []).append(c["verdict"])
                # each draw's own seeds (one outcome for a claim measured once)
                each = [r["passed"] for r in c["seeds"].values()] if "seeds" in c else [c["passed"]]
                outcomes.setdefault(key, []).extend(each)
    assert len(table) == len(verdicts)
    once = {"passed": "holds", "failed": "fails", "inconclusive": "inconclusive"}
    for r in table.itertuples():
        got = verdicts[(r.paper, r.figure, r.claim)]
        assert (r.passed, r.seeds) == (got.count("passed"), len(got)), r
        assert r.inconclusive == got.count("inconclusive"), r
        redrawn = f"{r.paper}/{r.figure}" in REDRAWN
        assert r.seeds == (1 + len(SEEDS) if redrawn else 1)
        assert "void" not in got  # every run of the CI sizes is valid
        want = once[got[0]] if len(set(got)) == 1 else "fragile"
        assert r.status == (want if redrawn else f"once-{want}")
        # the pooled verdict: the sign test over every seed of every draw
        pool = outcomes[(r.paper, r.figure, r.claim)]
        want = resolve(pool) if r.kind == "paper" else ("passed" if all(pool) else "failed")
        assert r.pooled == want and r.pooled_seeds.startswith(f"{sum(pool)}/{len(pool)}")
    paper = table[table.kind == "paper"]
    held = (paper.pooled == "passed").sum()
    md = (d / "results/robustness/summary.md").read_text()
    assert (f"**Paper claims pooled over the seeds of every draw (seed shifts 0, 1, 2): "
            f"{held}/{len(paper)} hold") in md  # fmt: skip


def test_each_seed_ran_in_its_own_folder_with_disjoint_draws(robust):
    d, _ = robust
    meta = json.loads((d / "results/seed-2/data/nucnorm/p4.json").read_text())["settings"]
    base = json.loads((d / "results/data/nucnorm/p4.json").read_text())["settings"]
    assert meta["seed"] == base["seed"] + 2_000_000 and meta["steps"] == base["steps"]
    assert not (d / "results/seed-1/claims/maxmargin").exists()  # deterministic: not rerun


def test_the_pictures_and_captions_exist_per_paper(robust):
    d, _ = robust
    for paper in ("nucnorm", "fastrates", "maxmargin"):
        for ext in ("pdf", "png"):
            assert (d / f"results/robustness/{paper}.{ext}").stat().st_size > 1000
    caption = (d / "results/robustness/nucnorm.rst").read_text()
    assert "Paper claims holding on every draw:" in caption and "Pooled over every seed" in caption
    assert "Measured once" in (d / "results/robustness/maxmargin.rst").read_text()


def test_the_default_results_are_untouched(robust):
    d, before = robust
    assert default_state(d) == before


def test_robustness_is_up_to_date_after_it_ran(robust):
    d, _ = robust
    res = snakemake_cmd(
        "robustness", "-n", "--configfile", *ci_configfiles(d), d.parent / "robust.yaml",
        cwd=d, check=True,
    )  # fmt: skip
    assert "Nothing to be done" in res.stdout + res.stderr


def test_the_report_shows_the_robustness_headline_and_pictures(robust, tmp_path):
    d, _ = robust
    zpath = tmp_path / "report.zip"
    res = snakemake_cmd(
        "robustness", "--configfile", *ci_configfiles(d), d.parent / "robust.yaml",
        "--report", zpath, cwd=d, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
    with zipfile.ZipFile(zpath) as z:
        names = z.namelist()
        text = "".join(
            z.read(n).decode("utf-8", "replace") for n in names if n.endswith((".html", ".js"))
        )
    # the report stores each item under a hash; the pictures keep their names (<paper>.png)
    assert any(n.endswith("/nucnorm.png") for n in names), names[:20]
    assert "Paper claims pooled over the seeds of every draw" in text
