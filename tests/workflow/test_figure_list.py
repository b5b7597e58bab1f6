"""The list of figures (docs/figures.md, `python -m attnbias.figures`) is generated from the
workflow's own figure table: one row per registered figure target, both presets, and the page
is up to date."""

import subprocess

import pytest
from conftest import BIN, ROOT, registered_figures, workflow_copy

from attnbias import figures


@pytest.fixture(scope="module")
def tables():
    wf = workflow_copy()
    return wf, figures.read_table(wf, "quick"), figures.read_table(wf, "paper")


def test_one_row_per_registered_figure(tables):
    _, quick, paper = tables
    expected = {f"{p}_{f}" for p, f in registered_figures()}
    assert [r["target"] for r in quick] == [r["target"] for r in paper]
    assert {r["target"] for r in quick} == expected
    assert not [r["target"] for r in quick if not r["description"]]


def test_costs_follow_the_figure_table(tables):
    _, quick, paper = tables
    q = {r["target"]: r for r in quick}
    p = {r["target"]: r for r in paper}
    # a synthetic group: its instance, svm and compute jobs, the same in both presets
    assert figures.cost(q["maxmargin_fig1c"]) == figures.cost(p["maxmargin_fig1c"]) == "3 CPU jobs"
    # the maxmargin ViT: one CPU run per seed in the quick preset, one GPU run per seed and a
    # download in the paper's
    assert figures.cost(q["maxmargin_fig6"]) == "3 CPU runs (≤ 30 min each)"
    assert figures.cost(p["maxmargin_fig6"]) == "3 GPU runs (≤ 6 h each), 1 download"
    # fastrates Fig 1: 4 optimisers × 3 step sizes × 3 seeds, batched per optimiser in the quick
    # preset
    assert figures.cost(q["fastrates_fig1"]).startswith("36 CPU runs in 4 jobs")
    assert figures.cost(p["fastrates_fig1"]).startswith("36 GPU runs (≤ 1 h each)")
    # lowrank Fig 4 (quick) reads the Fig 3 language models: their runs count
    assert "9 CPU runs in 3 jobs" in figures.cost(q["lowrank_fig4"])
    gpu = {r["target"] for r in paper if any(s["gpu"] for s in r["sweeps"])}
    assert {"maxmargin_fig6", "fastrates_fig1", "lowrank_fig2", "lowrank_fig3"} <= gpu
    assert not any(s["gpu"] for r in quick for s in r["sweeps"])  # the quick preset: CPU only


def test_the_page_is_up_to_date(tables):
    wf, _, _ = tables
    page = ROOT / "docs" / "figures.md"
    cmd = [str(BIN / "python"), "-m", "attnbias.figures", "--check", str(page), "--root", str(wf)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    text = page.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| [`")]
    assert len(rows) == len(registered_figures())


def test_caption_lines(tmp_path):
    report = tmp_path / "workflow" / "report"
    report.mkdir(parents=True)
    (report / "p_fig1.rst").write_text(
        "**Fig. 1(a)**: the norm ‖p(t)‖ of two runs (n = 3, T = 7).  **Checked:** it grows.\n"
    )
    (report / "p_fig2.rst").write_text(
        "**Fig. 2, a title long enough to stand on its own**: then details.  More.\n"
    )
    assert figures.caption_line(tmp_path, "p", "fig1") == "Fig. 1(a): the norm ‖p(t)‖ of two runs"
    assert figures.caption_line(tmp_path, "p", "fig2") == (
        "Fig. 2, a title long enough to stand on its own"
    )
    assert figures.caption_line(tmp_path, "p", "fig3") == ""
    cut = figures.caption_line(tmp_path, "p", "fig2", width=20)
    assert cut.endswith("…") and len(cut) <= 20
