"""The measured cost table (workflow/costs/, attnbias.estimates): it covers every registered
figure, every printed estimate is computed from it (a changed table changes the line), and
benchmarks/job_costs.py writes it from a run's benchmark files and logs (a tiny fake run)."""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
import sys

import pytest
from conftest import ROOT, registered_figures

from attnbias import estimates, hints
from attnbias.estimates import Costs, RunEstimates
from attnbias.run import load_run

_spec = importlib.util.spec_from_file_location("job_costs", ROOT / "benchmarks" / "job_costs.py")
job_costs = importlib.util.module_from_spec(_spec)
sys.modules["job_costs"] = job_costs
_spec.loader.exec_module(job_costs)


@pytest.fixture(scope="module")
def run():
    return load_run(ROOT)


def test_the_table_covers_every_registered_figure_and_names_its_measurement():
    rows = estimates.figure_table(ROOT)
    assert list(rows) == registered_figures()
    costs = Costs.load(ROOT)
    meta = costs.meta
    assert {"machine", "date", "commit", "cores", "total"} <= set(meta)
    assert costs.source() == (f"measured at commit {meta['commit']} on {meta['machine']}, "
                              f"{meta['date']}, workflow/costs/")  # fmt: skip
    # every job row names figures of the table; the total is over distinct jobs
    figs = {f"{p}/{f}" for p, f in registered_figures()}
    assert all(set(r["figures"]) <= figs and r["figures"] for r in costs.jobs.values())
    assert meta["total"]["jobs"] == len(costs.jobs)
    shared = [k for k, r in costs.jobs.items() if len(r["figures"]) > 1]
    assert shared  # e.g. lowrank's LM runs feed Fig 3, Table 1, Fig C and Fig 4
    for p, f in registered_figures():
        row = rows[(p, f)]
        stages = sum(float(row[f"{s}_wall_s"]) for s in estimates.STAGES)
        assert float(row["wall_s"]) == pytest.approx(stages, abs=0.05)


def _changed_copy(tmp_path, factor: float, commit: str):
    """A copy of the cost table with every time multiplied by ``factor`` and another commit."""
    dest = tmp_path / "workflow" / "costs"
    shutil.copytree(ROOT / estimates.FOLDER, dest)
    with open(dest / "jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("cpu_s", "wall_s"):
            r[k] = f"{float(r[k]) * factor:.2f}" if r[k] else ""
    with open(dest / "jobs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    meta = json.loads((dest / "measured.json").read_text())
    (dest / "measured.json").write_text(json.dumps(dict(meta, commit=commit)))
    return Costs.load(tmp_path)


def test_every_printed_estimate_is_computed_from_the_table(tmp_path, run):
    seeds = [1, 2, 3, 4]
    base = RunEstimates(run)
    changed = RunEstimates(run, _changed_copy(tmp_path, 3.0, "fedcba9"))
    line, other = base.robustness(seeds, 2), changed.robustness(seeds, 2)
    assert line != other and "commit fedcba9" in other and base.costs.source() in line
    # the robustness time is the redrawn figures' distinct jobs (no plots) × seeds / cores
    redrawn = [k for k, v in run.robustness.figures.items() if v]
    c = base.costs.of(k for k in base.costs.figures(redrawn) if k[0] != "plot")
    assert f"{estimates.about(estimates.minutes(c, 2, 4))} for the 4 seed shifts on 2" in line
    assert f"{len(redrawn)} redrawn figures, {c['jobs']} jobs a seed shift" in line
    nucnorm = base.robustness(seeds, 2, papers=["nucnorm"])  # robustness_nucnorm
    n = len([k for k in redrawn if k.startswith("nucnorm/")])
    assert nucnorm.startswith(f"{n} redrawn figures, ") and nucnorm != line
    assert estimates.about(0.5) == "about 30 s" and estimates.about(2.25) == "about 2.2 min"
    # and the line the workflow prints carries it
    assert hints.robustness_note(seeds, line).endswith(f": {line} (docs/controls.md)")
    control = RunEstimates(load_run(ROOT, config={"control": None}))
    assert control.control(2) != RunEstimates(control.run, changed.costs).control(2)
    seed = RunEstimates(load_run(ROOT, config={"seed": 2}))
    assert seed.compare(2) != RunEstimates(seed.run, changed.costs).compare(2)
    assert "commit" in seed.compare(2) and "figures" in seed.compare(2)


def test_the_control_counts_only_the_runs_it_retrains():
    """Under control=null, a training job whose runs are all relabelled copies of the default
    run's costs nothing (fastrates, lowrank); the ViT runs of maxmargin, retrained with W_q, W_k
    frozen, cost in full."""
    table = load_run(ROOT, config={"control": None}).table
    share = estimates.control_share(table)
    assert share("train", "maxmargin/vit/seed0") == 1.0
    assert share("train", "fastrates/fig1/optsgd") == 0.0
    assert share("check", "fastrates/fig1") == 1.0
    costs = Costs(
        {("train", "maxmargin/vit/seed0"): dict(cpu_s=50.0, wall_s=60.0,
                                                figures=["maxmargin/fig6"]),
         ("train", "fastrates/fig1/optsgd"): dict(cpu_s=9.0, wall_s=10.0,
                                                  figures=["fastrates/fig1"])},
        dict(commit="abc1234", machine="m", date="d"),
    )  # fmt: skip
    c = costs.of(costs.figures(["maxmargin/fig6", "fastrates/fig1"]), share)
    assert (c["jobs"], c["wall_s"], c["cpu_s"]) == (1, 60.0, 50.0)
    assert estimates.minutes(c, 4) == 1.0  # never below the longest job


def test_figures_md_shows_the_measured_time_of_each_figure():
    text = (ROOT / "docs" / "figures.md").read_text()
    costs = Costs.load(ROOT)
    assert costs.source() in text
    row = estimates.figure_table(ROOT)[("lowrank", "fig3")]
    assert estimates.figure_cell(row) in text


def _fake_run(tmp_path):
    results = tmp_path / "results"
    for stage, entry, wall, cpu, log in [
        ("compute", "maxmargin/fig1", "1.50", "0.30",
         "x\nINFO attnbias: cpu: 0.94 s, max RSS 2 MB\n"),
        ("check", "maxmargin/fig1c", "0.80", "0.20", None),
        ("train", "lowrank/lm/sa0_mlp0.1", "30.00", "10.00",
         "INFO attnbias: cpu: 25.50 s, max RSS 900 MB\n"),
    ]:  # fmt: skip
        bench = results / "benchmarks" / stage / f"{entry}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{wall}\t0:00:01\t100\t{cpu}\n")
        if log:
            path = results / "logs" / stage / f"{entry}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(log)
    return results


def test_the_update_script_reads_a_tiny_fake_run(tmp_path, run):
    results = _fake_run(tmp_path)
    jobs, figs, total = job_costs.measure(results, run.table)
    by = {(r["stage"], r["entry"]): r for r in jobs}
    # the log's CPU time wins over the benchmark's sampled one; a job without a log keeps it
    assert by[("compute", "maxmargin/fig1")] | {} == dict(
        stage="compute", entry="maxmargin/fig1", cpu_s="0.94", wall_s="1.50",
        figures="maxmargin/fig1a;maxmargin/fig1b;maxmargin/fig1c")  # fmt: skip
    assert by[("check", "maxmargin/fig1c")]["cpu_s"] == "0.20"
    # a shared job (the LM runs) is listed once and counted in every figure that needs it
    lm = by[("train", "lowrank/lm/sa0_mlp0.1")]
    assert {"lowrank/fig3", "lowrank/table1"} <= set(lm["figures"].split(";"))
    rows = {(r["paper"], r["figure"]): r for r in figs}
    assert list(rows) == registered_figures()
    assert rows[("maxmargin", "fig1c")]["wall_s"] == "2.30"
    assert rows[("maxmargin", "fig1c")]["compute_wall_s"] == "1.50"
    assert rows[("maxmargin", "fig1c")]["missing"] == 1  # its plot job has no benchmark here
    for fig in ("fig3", "table1"):
        assert rows[("lowrank", fig)]["train_cpu_s"] == "25.50"
    assert (total["measured"], total["wall_s"], total["cpu_s"]) == (3, 32.3, 26.64)
    # the one-line command: --update writes the three files under --root
    root = tmp_path / "wf"
    shutil.copytree(ROOT / "workflow", root / "workflow", ignore=shutil.ignore_patterns("costs"))
    for name in ("config.yaml", "Snakefile"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scripts", root / "scripts")
    (root / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "figures.md", root / "docs" / "figures.md")
    assert job_costs.main(["--results", str(results), "--root", str(root), "--update",
                           "--commit", "1234567", "--date", "2026-12-02", "--machine", "m"]) == 0
    costs = Costs.load(root)
    assert costs.meta["commit"] == "1234567" and costs.meta["total"]["measured"] == 3
    assert costs.jobs[("compute", "maxmargin/fig1")]["wall_s"] == 1.5
    # and the figure list's measured column follows the new table
    page = (root / "docs" / "figures.md").read_text()
    assert costs.source() in page and "measured at commit 1234567" in page
