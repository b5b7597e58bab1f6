"""The report's pages as a reader meets them in a browser, checked on their HTML and text (CI has
no browser; the screenshots at 1,600 px are in docs/outputs.md's account of the report):

- no raw TeX: the report renders none, so captions write math in Unicode and the claims' TeX-like
  statements are converted (attnbias.claims.caption.unicode_math) in captions and on the page of
  every claim;
- nothing clipped in the side panel: the figure caption wrapper makes long words (paths, job
  parameters) wrap and widens the panel;
- no sideways scrolling on the page of every claim: fixed-width tables of a bounded number of
  columns whose cells wrap;
- the menu entry of a figure carries its paper claims' tally once its claim file exists, and is the
  plain label when it does not (attnbias.run.jobs.JobFunctions.report_menu).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnbias.claims.caption import TEX, render_caption, unicode_math
from attnbias.claims.core import compare, holds, write_claims
from attnbias.claims.landing import report_menu
from attnbias.claims.summary import summary_table
from attnbias.claims.summary_html import (
    EVERY_CLAIM_COLUMNS,
    NOT_PASSED_COLUMNS,
    PER_FIGURE_COLUMNS,
    PER_PAPER_COLUMNS,
    VOID_COLUMNS,
    _breakable,
    summary_html,
)

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "workflow" / "report"
# TeX-like statements as the claim modules write them (maxmargin, lowrank, fastrates)
TEX_STATEMENTS = [
    "GMM p^mm = (−0.1, 1)/1.01",
    "paths started in C_{μ,R} stay in the cone: min_t cos(p_t, LMM) ≥ 1 − μ",
    "u_mm selects opt: min over seeds of γ_opt − max_{τ≠opt} γ_τ under u_mm",
    "PW_V: max over every head of ‖ABᵀ‖_* / ½(‖A‖² + ‖B‖²) (never above 1)",
    "p^relax = (1, 0)",
]


def _prose(text: str) -> str:
    """A caption's text outside ``literals`` (claim-id patterns such as ``*_norm_*``) and Jinja."""
    text = re.sub(r"``.*?``", "", text, flags=re.S)
    return re.sub(r"\{\{.*?\}\}|\{%.*?%\}", "", text, flags=re.S)


@pytest.mark.parametrize("path", sorted(REPORT.glob("*.rst")), ids=lambda p: p.stem)
def test_no_raw_tex_in_a_caption(path):
    found = [m.group(0) for m in TEX.finditer(_prose(path.read_text()))]
    assert not found, f"{path.name}: raw TeX {found} (the report shows it as typed; use Unicode)"


def test_tex_is_caught():
    for text in ["P^hW_V^h", "W_K^{hT}", "‖ABᵀ‖_*", "C_{μ,R}", r"\lambda", "$x$"]:
        assert TEX.search(_prose(text)), text
    assert not TEX.search(_prose("PʰW_Vʰ, ‖ABᵀ‖⁎, W_K, γ_b, ``*_norm_*``, ``auc_*``"))


def test_unicode_math():
    assert unicode_math("GMM p^mm = (−0.1, 1)") == "GMM pᵐᵐ = (−0.1, 1)"
    assert unicode_math("P^hW_V^h and W_K^{hT}W_Q^h") == "PʰW_Vʰ and W_KʰᵀW_Qʰ"
    assert unicode_math("‖ABᵀ‖_* and ‖W*_F‖_*") == "‖ABᵀ‖⁎ and ‖W*_F‖⁎"
    assert unicode_math("C_{μ,R}, γ_{i}, max_{τ≠opt}") == "C_(μ,R), γ_i, max_(τ≠opt)"
    assert unicode_math("A^T x, 10^{-2}, x^2") == "Aᵀ x, 10⁻², x²"
    assert unicode_math("W_K, γ_b, |·| ≤ 1e-06") == "W_K, γ_b, |·| ≤ 1e-06"  # nothing to do
    for s in TEX_STATEMENTS:
        assert not TEX.search(unicode_math(s)), s


def _claims() -> list:
    """Paper claims with the statements above (c0, c2, c4 pass; c1, c3 fail) and a sanity check."""
    claims = [
        compare(f"c{i}", s, 0.5, ">", 1.0 if i % 2 else 0.0, kind="paper")
        for i, s in enumerate(TEX_STATEMENTS)
    ]
    return [*claims, holds("trained", "the run trained", True, True, kind="sanity")]


def _claims_doc(control: str = "none") -> dict:
    return {"paper": "maxmargin", "figure": "fig1c", "preset": "quick", "control": control,
            "claims": [c.to_dict() for c in _claims()]}  # fmt: skip


def test_a_rendered_caption_has_no_raw_tex(tmp_path):
    """The claim lines the plot job appends (those that did not pass: c1, c3) carry their
    statements in Unicode (the static part is checked above): C_(μ,R), ‖ABᵀ‖⁎ — and nothing
    TeX-like outside ``literals``."""
    out = tmp_path / "fig1c.rst"
    render_caption(REPORT / "maxmargin_fig1c.rst", _claims_doc(), {}, out)
    text = out.read_text()
    assert "C_(μ,R)" in text and "‖ABᵀ‖⁎" in text
    assert not TEX.search(_prose(text)), _prose(text)
    doc = _claims_doc()
    for c in doc["claims"]:
        c["passed"] = c["kind"] != "paper"  # every paper claim fails: each in a line of its own
    render_caption(REPORT / "maxmargin_fig1c.rst", doc, {}, out)
    text = out.read_text()
    assert "pᵐᵐ" in text and "pʳᵉˡᵃˣ" in text and not TEX.search(_prose(text))


def test_the_figure_caption_wrapper_wraps_long_words():
    """The side panel showed job parameters and ``docs/papers/…#…`` links cut at its edge: the
    wrapper's style lets them break and gives the panel room."""
    text = (REPORT / "figure.rst").read_text()
    style = re.search(r"\.\. raw:: html\s+<style>(.*?)</style>", text, re.S)
    assert style and "overflow-wrap:anywhere" in style.group(1) and "min-width" in style.group(1)


# --- the page of every claim ------------------------------------------------------------------


@pytest.fixture
def page(tmp_path) -> str:
    files = [tmp_path / f"{fig}.json" for fig in ("fig1c", "fig2")]
    for f in files:
        write_claims(f, "maxmargin", f.stem, "quick", _claims())
    return summary_html(summary_table(files))


def _tables(html: str) -> list[str]:
    return re.findall(r"<table>.*?</table>", html, re.S)


def test_every_table_fits_the_panel(page):
    """No horizontal scroll in the report's panel (half of a 1,600 px window): fixed layout at the
    page's width, wrapped cells, column widths that add up to the width.  Here: per paper, the
    failed claims (c1, c3), per figure, every claim."""
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    assert "table-layout:fixed" in css and "width:100%" in css
    assert "overflow-wrap:anywhere" in css
    tables = _tables(page)
    per_paper = [c for c in PER_PAPER_COLUMNS if not c[0].startswith("positive")]  # no control
    expected = (per_paper, NOT_PASSED_COLUMNS, PER_FIGURE_COLUMNS, EVERY_CLAIM_COLUMNS)
    assert len(tables) == len(expected)
    for table, columns in zip(tables, expected, strict=True):
        widths = [int(w) for w in re.findall(r"<col style='width:(\d+)%'>", table)]
        assert sum(widths) == 100 and len(widths) == len(columns)
        # the shares as set, rescaled to the page's width where a column is left out
        scale = 100 / sum(w for _, w in columns)
        assert all(abs(w - s * scale) <= 4 for w, (_, s) in zip(widths, columns, strict=True))
        header = re.search(r"<tr>(.*?)</tr>", table, re.S).group(1)
        assert re.findall(r"<th>(.*?)</th>", header) == [html.escape(c) for c, _ in columns]
    for columns in (PER_PAPER_COLUMNS, PER_FIGURE_COLUMNS, NOT_PASSED_COLUMNS, VOID_COLUMNS,
                    EVERY_CLAIM_COLUMNS):  # fmt: skip
        assert sum(w for _, w in columns) == 100 and len(columns) <= 9
    assert len(EVERY_CLAIM_COLUMNS) <= 6
    rows = re.findall(r"<tr class='(\w+)'>(.*?)</tr>", tables[-1], re.S)
    assert len(rows) == 2 * (len(TEX_STATEMENTS) + 1)
    assert all(r.count("<td") == len(EVERY_CLAIM_COLUMNS) for _, r in rows)
    failed = re.findall(r"<tr class='(\w+)'>(.*?)</tr>", tables[1], re.S)
    assert len(failed) == 4 and all("<code>c1</code>" in r or "<code>c3</code>" in r
                                    for _, r in failed)  # fmt: skip


def test_the_page_reads_in_order_with_a_menu(page):
    """Counts per paper first, then what did not pass, then per figure and every claim; a line of
    links to each section; what the verdicts mean folded away under the headline."""
    heads = re.findall(r"<h3 id='([\w-]+)'>", page)
    assert heads == ["per-paper", "failed", "per-figure", "every-claim"]
    nav = re.search(r"<nav>(.*?)</nav>", page).group(1)
    assert re.findall(r"href='#([\w-]+)'", nav) == heads
    assert "Failed (4)" in nav and "Every claim (12)" in nav
    assert page.index("<details><summary>What the kinds and verdicts mean") < page.index(
        "<h3 id='per-paper'>")  # fmt: skip


def test_every_claim_page_shows_math_in_unicode(page):
    every = _tables(page)[-1]
    assert "pᵐᵐ" in every and "C_(μ,R)" in every and "‖ABᵀ‖⁎" in every
    text = re.sub(r"<[^>]+>", "", every)
    assert not TEX.search(text)
    assert not TEX.search(re.sub(r"<[^>]+>", "", page))  # nor anywhere else on the page


def test_claim_ids_break_at_underscores():
    """A narrow claim column breaks ``gmm_split_t1000`` after an underscore, not mid-word."""
    assert _breakable("gmm_split_t1000") == "gmm_<wbr>split_<wbr>t1000"
    assert _breakable("a<b") == "a&lt;b"


# --- the menu --------------------------------------------------------------------------------

FIGS = ["fig1a", "fig1b", "fig1c", "fig2", "fig10"]


def test_the_menu_shows_the_tally_when_claims_exist():
    doc = _claims_doc()
    assert report_menu("fig1c", FIGS, doc) == "03 fig1c · 3/5 passed, 2 failed"
    assert report_menu("fig1c", FIGS) == "03 fig1c"
    passing = {**doc, "claims": [c for c in doc["claims"] if c["passed"]]}
    assert report_menu("fig10", FIGS, passing) == "05 fig10 · 3/3 passed"
    control = {**doc, "control": "null"}
    assert report_menu("fig2", FIGS, control).endswith("2 failed (negative control)")
    void = {**doc, "claims": [*doc["claims"][:2], holds("trained", "t", False, False,
                                                         kind="sanity").to_dict()]}
    assert report_menu("fig2", FIGS, void) == "04 fig2 · 0/2 passed, 2 void"
    sanity_only = {**doc, "claims": doc["claims"][-1:]}
    assert report_menu("fig1a", FIGS, sanity_only) == "01 fig1a · no paper claim"


def test_the_menu_sorts_in_reading_order_with_tallies():
    doc = _claims_doc()
    menu = sorted(report_menu(f, FIGS, doc) for f in FIGS)  # the report sorts as text
    assert [m.split(" · ")[0] for m in menu] == ["01 fig1a", "02 fig1b", "03 fig1c", "04 fig2",
                                                  "05 fig10"]  # fmt: skip


def test_the_rules_menu_reads_the_claim_file_if_there(tmp_path, monkeypatch):
    """The plot rule's subcategory (Snakemake evaluates it when writing the report, in the
    workflow's folder): the tally from the claim file; the plain label without one or with an
    unreadable one — never an error, and no job's params depend on it."""
    from attnbias.run import load_run

    run = load_run(ROOT)
    monkeypatch.chdir(tmp_path)
    wc = SimpleNamespace(entry="maxmargin/fig1c")
    assert run.report_menu(wc) == "03 fig1c"
    claim_file = tmp_path / run.results / "claims" / "maxmargin" / "fig1c.json"
    claim_file.parent.mkdir(parents=True)
    write_claims(claim_file, "maxmargin", "fig1c", "quick", _claims())
    assert run.report_menu(wc) == "03 fig1c · 3/5 passed, 2 failed"
    claim_file.write_text("{not json")
    assert run.report_menu(wc) == "03 fig1c"
    claim_file.write_text(json.dumps({"claims": [{"id": "x"}]}))  # no kind: an old file
    assert run.report_menu(wc) == "03 fig1c"
