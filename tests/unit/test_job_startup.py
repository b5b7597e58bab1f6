"""Plot, claim and synthetic compute jobs start without the deep-learning stack.

Each job is a fresh interpreter (Snakemake's ``script:``), so what its entry point imports is paid
by every job.  A fresh interpreter loads what scripts/plot.py, scripts/check.py and
scripts/compute.py load for each paper, and the heavy libraries must not be among its modules.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "datasets", "tokenizers")

# one synthetic compute function per paper (the deep-learning ones import torch by design)
SYNTHETIC = ["maxmargin.study.trajectories_fig9", "fastrates.synthetic.trajectories_fig3",
             "nucnorm.full.trajectories_p1",
             "fastrates.problems.svm_fig2", "nucnorm.problems.svm_p5",
             "lowrank.compute_fig1"]  # fmt: skip
PAPERS = ["maxmargin", "fastrates", "nucnorm", "lowrank"]


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return set(out.stdout.split())


@pytest.mark.parametrize("paper", PAPERS)
def test_plot_and_claim_jobs_import_no_deep_learning_library(paper):
    loaded = modules_after(
        "from attnbias.claims import read_claims, write_claims\n"
        "from attnbias.claims.caption import render_caption\n"
        "from attnbias.plotting import mark_control, save_figure\n"
        "from attnbias.workflow import call_figure, figure_data, resolve, rule_logging\n"
        f"import attnbias.plotting.{paper}, attnbias.claims.{paper}\n"
    )
    assert f"attnbias.plotting.{paper}" in loaded  # the probe really imported the figure code
    assert not [m for m in HEAVY if m in loaded]
    # figures are matplotlib.figure.Figure objects saved by their own canvas: no pyplot import
    assert "matplotlib.pyplot" not in loaded and "matplotlib.figure" in loaded


@pytest.mark.parametrize("func", SYNTHETIC)
def test_synthetic_compute_jobs_import_no_deep_learning_library(func):
    loaded = modules_after(
        "from attnbias.workflow import limit_threads, named_inputs, resolve, rule_logging\n"
        "from attnbias.io import save_data\n"
        f"resolve('attnbias.experiments', {func!r})\n"
    )
    assert f"attnbias.experiments.{func.split('.')[0]}" in loaded
    assert not [m for m in HEAVY if m in loaded]


def test_a_real_plot_job_entry_point_imports_no_deep_learning_library(finished_fig1c, tmp_path):
    """The plot job of a finished figure rerun with Snakemake's own generated script (its
    ``script:`` preamble included, kept by --skip-script-cleanup), then that script run again in
    a fresh interpreter: the modules it loads include no deep-learning library and no pyplot, and
    its log records the start-up."""
    from conftest import clone_run, snakemake_cmd

    run = clone_run(finished_fig1c, tmp_path / "run")
    target = "results/figures/maxmargin/fig1c.pdf"
    snakemake_cmd("--cores", "1", "-f", target, "--skip-script-cleanup", cwd=run, check=True)
    (script,) = (run / ".snakemake" / "scripts").glob("tmp*.plot.py")
    probe = f"import runpy, sys\nrunpy.run_path({str(script)!r})\nprint(' '.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=run, capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    assert "attnbias.plotting.maxmargin" in loaded and "matplotlib.figure" in loaded
    assert not [m for m in HEAVY if m in loaded] and "matplotlib.pyplot" not in loaded
    log = (run / "results" / "logs" / "plot" / "maxmargin" / "fig1c.log").read_text()
    assert "start-up: " in log and "to attnbias.plotting.maxmargin.fig1c" in log
