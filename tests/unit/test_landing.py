"""The report's landing page (attnbias.claims.landing, workflow/report/workflow.rst): the headline
with void counted apart, one row per figure in reading order linking to its picture, the
robustness column once `snakemake robustness` ran, and the newer of the two landing files shown."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from attnbias.claims import not_measurable
from attnbias.claims.core import compare, holds, write_claims
from attnbias.claims.landing import landing_rst, report_menu, write_landing
from attnbias.claims.robustness import seed_table, write_robustness
from attnbias.claims.summary import read_summary, write_summary

docutils_core = pytest.importorskip("docutils.core")
jinja2 = pytest.importorskip("jinja2")

WORKFLOW_RST = Path(__file__).resolve().parents[2] / "workflow" / "report" / "workflow.rst"


def _run(tmp_path) -> Path:
    """Claim files of a small run: fig10 all passing, fig1a with a failed paper claim, fig2 whose
    sanity check failed (its passing paper claim is void), fig3 not measurable; the summary CSV."""
    d = tmp_path / "claims"

    def paper(cid, ok):
        return compare(cid, f"{cid} holds", 1.0 if ok else -1.0, ">", 0.0, kind="paper")

    def sanity(cid, ok):
        return holds(cid, "the run is valid", ok, ok, kind="sanity")

    figs = {
        "fig10": [paper("a", True), sanity("trained", True)],
        "fig1a": [paper("b", True), paper("c", False), sanity("trained", True)],
        "fig2": [paper("d", True), sanity("own_step", False)],
        "fig3": not_measurable(ValueError("empty window")),
    }
    for fig, claims in figs.items():
        write_claims(d / f"{fig}.json", "maxmargin", fig, "quick", claims)
    write_summary([d / f"{f}.json" for f in figs], d / "summary.md", d / "summary.csv")
    return d / "summary.csv"


def _system_messages(text: str) -> list[str]:
    from docutils import nodes

    doc = docutils_core.publish_doctree(
        text, settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False}
    )
    return [m.astext()[:200] for m in doc.findall(nodes.system_message) if m["level"] >= 2]


def test_landing_page_has_the_headline_and_one_row_per_figure_in_reading_order(tmp_path):
    summary = read_summary(_run(tmp_path))
    text = landing_rst(summary, png="results/figures/{paper}/{fig}.png",
                       every_claim="results/claims/summary.html")  # fmt: skip
    assert (
        "What holds\n==========\n\n**Paper claims: 2/4 passed, 1 failed, 0 "
            "inconclusive, 1 void; not measurable: "
        "maxmargin fig3 (every paper claim void, uncounted)."
    ) in text
    rows = [line.split("`")[1].split(" <")[0] for line in text.splitlines() if "- `fig" in line]
    assert rows == ["fig1a", "fig2", "fig3", "fig10"]
    assert "contentPath:results['results/figures/maxmargin/fig10.png'].data_uri" in text
    assert "results['results/claims/summary.html'].data_uri" in text
    assert ":void:`1 (own_step)`" in text and ":void:`all: not measurable`" in text
    assert ":failed:`1`" in text  # fig1a's failed paper claim
    # the counts per paper (docs/outputs.md: "per paper"), before the rows of every figure
    assert text.index("**Per paper**") < text.index("**Per figure**") < text.index("- `fig1a")
    per_paper = text[text.index("**Per paper**"):text.index("**Per figure**")]
    cells = [x.strip().removeprefix("* ").removeprefix("- ") for x in per_paper.splitlines()
             if x.strip().startswith(("* -", "-"))]  # fmt: skip
    assert cells == ["paper", "paper claims passed", "failed", "inconclusive", "void",
                     "regime checks", "sanity checks",
                     "maxmargin", ":passed:`2/4`", ":failed:`1`", "0",
                     ":void:`1; fig3 not measurable`", "0/0", ":failed:`2/4`"]
    assert "void (the failed check)" in text and "regime checks" in text
    assert "over seeds" not in text  # no robustness table yet
    assert not _system_messages(text)
    html = docutils_core.publish_parts(text, writer="html")["html_body"]
    assert '<span class="void">1 (own_step)</span>' in html and "<table" in html


def test_landing_page_shows_the_robustness_column_once_it_ran(tmp_path):
    csv = _run(tmp_path)
    seeds = pd.concat(
        [seed_table([tmp_path / "claims" / f"{f}.json" for f in ("fig1a", "fig2", "fig10")], s,
                    {"maxmargin/fig1a": True, "maxmargin/fig2": True, "maxmargin/fig10": False})
         for s in (0,)] + [
        seed_table([tmp_path / "claims" / f"{f}.json" for f in ("fig1a", "fig2")], 1,
                   {"maxmargin/fig1a": True, "maxmargin/fig2": True})],
        ignore_index=True,
    )  # fmt: skip
    robust_csv = tmp_path / "robustness.csv"
    shows = dict(preset="quick", control="none", folders=["results", "results/seed-1"])
    write_robustness(seeds, tmp_path / "robustness.md", robust_csv, shows)
    assert json.loads(robust_csv.with_suffix(".json").read_text()) == {"seeds": [0, 1]}
    text = write_landing(tmp_path / "landing.rst", csv, robust_csv, "f/{paper}/{fig}.png")
    assert (tmp_path / "landing.rst").read_text() == text
    assert ("**Over seeds.**  Paper claims pooled over the seeds of every draw (seed shifts 0, 1): "
            "2/4 hold, 1 fail, 0 inconclusive, 1 void (1 of them measured once") in text
    assert "     - paper claims over seeds (—: not in the robustness run)" in text
    assert "     - pooled: 1/2 hold, 1 fail; 1/2 hold on all 2 draws; 1 fail on every valid " \
        "draw" in text  # fig1a  # fmt: skip
    assert "     - pooled: 0/1 hold, 1 void; 0/1 hold on all 2 draws; 1 void on some " \
        "draw; sanity " \
        "failing on some draw: own_step" in text  # fmt: skip
    assert "     - measured once (not redrawn)" in text  # fig10
    assert "     - —\n   * - maxmargin\n     - `fig10" in text  # fig3: not in the robustness run
    assert not _system_messages(text)
    # a report of the robustness target alone: no claims summary
    alone = write_landing(tmp_path / "l2.rst", tmp_path / "missing.csv", robust_csv)
    assert "Paper claims:" not in alone and "Over seeds" in alone and "- fig10" in alone
    assert not _system_messages(alone)


def test_report_menu_sorts_as_text_in_reading_order():
    figs = ["fig10", "fig1a", "fig9b", "fig2", "fig1b"]
    menu = sorted(report_menu(f, figs) for f in figs)  # the report sorts its menus as text
    assert menu == ["01 fig1a", "02 fig1b", "03 fig2", "04 fig9b", "05 fig10"]


def _render_workflow_rst(files) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    snakemake = SimpleNamespace(config={"scale": "quick"})
    return env.from_string(WORKFLOW_RST.read_text()).render(
        snakemake=snakemake, categories={}, files=files
    )


def _record(rule: str, landing: list[Path]):
    """What the report's template sees of a result: its job's rule name and params."""
    job = SimpleNamespace(rule=SimpleNamespace(name=rule), params=SimpleNamespace(landing=landing))
    return SimpleNamespace(job=job, path=Path("x.html"))


def test_the_report_front_page_shows_the_newer_landing_page(tmp_path):
    claims, robust = tmp_path / "claims.rst", tmp_path / "robust.rst"
    pages = [claims, robust]
    assert "What holds" not in _render_workflow_rst([])  # nothing run: the description only
    assert "preset ``quick``" in _render_workflow_rst([])
    claims.write_text("**What holds.**  from the claims summary\n")
    text = _render_workflow_rst([_record("plot", []), _record("claims_summary", pages)])
    assert text.startswith("**What holds.**  from the claims summary")
    robust.write_text("**What holds.**  from the robustness summary\n")
    os.utime(claims, (1_000, 1_000))
    assert "from the robustness summary" in _render_workflow_rst([_record("claims_summary", pages)])
    os.utime(robust, (500, 500))
    text = _render_workflow_rst([_record("robustness_summary", pages)])
    assert "from the claims summary" in text and "from the robustness summary" not in text
    assert not _system_messages(text)
