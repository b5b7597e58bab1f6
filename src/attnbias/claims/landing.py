"""The report's landing page: what holds, figure by figure.

:func:`landing_rst` writes the reStructuredText that the report's front page
(``workflow/report/workflow.rst``) shows: the claims headline (paper claims passed / failed /
inconclusive / void, :func:`attnbias.claims.summary.headline`), what *inconclusive* and *void*
mean, the counts per paper (paper claims by verdict, positive controls, regime and sanity
checks), then one row per figure in reading order (paper, figure linking to its picture in the
report, paper claims passed / failed / inconclusive / void with the check that voids them, regime
and sanity checks, and how its paper claims fared over seeds once ``snakemake robustness`` has
run).

Two rules write it, each reading the other's table when it exists: the claims summary (with the
robustness table of an earlier ``snakemake robustness``) and the robustness summary (with the
claims summary of the run); the report shows the newer of the two, so it is current whichever ran
last.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from ..io import natural_key
from .core import is_not_measurable, verdicts
from .robustness import figure_summary
from .robustness import headline as robust_headline
from .summary import INCONCLUSIVE_MEANING, VOID_MEANING, counts, headline, read_summary

# Styles of the landing page (raw HTML inside the report's description panel, which Snakemake
# keeps narrow, centred vertically, beside the rule graph): full width from the top, the rule
# graph below.
_STYLE = """\
.. raw:: html

   <style>
   div.items-center:has(table.landing) {align-items: flex-start}
   div.gap-3:has(table.landing) {flex-wrap: wrap}
   div.py-2:has(table.landing) {width: 100%}
   .prose:has(table.landing) {max-width: 72rem}
   .prose:has(table.landing) h1 {font-size: 1.5rem; margin-bottom: 0.6rem}
   table.landing {font-size: 0.8rem; margin-top: 0.5rem}
   table.landing th, table.landing td {padding: 0.15rem 0.45rem}
   table.landing span.passed {color: #1a7f37}
   table.landing span.failed {color: #cf222e; font-weight: bold}
   table.landing span.inconclusive {color: #9a6700}
   table.landing span.void {color: #6e7781; font-style: italic}
   </style>

.. role:: passed
.. role:: failed
.. role:: inconclusive
.. role:: void
"""


def report_menu(fig: str, figures, claims: dict | None = None) -> str:
    """A figure's entry in the report's menu of its paper: its place among ``figures`` (the
    paper's figure ids) in reading order, then its id — "03 fig1c", "19 fig10" — as the report
    sorts its menus as text, where fig10 would come before fig1a; with its claim document
    ``claims`` (once checked), how its paper claims fared: "03 fig1c · 2/2 passed",
    "01 fig1 · 1/6 passed, 4 failed, 1 inconclusive", "04 fig3 · not measurable"."""
    order = sorted(figures, key=natural_key)
    label = f"{order.index(fig) + 1:02d} {fig}"
    if claims is None:
        return label
    if is_not_measurable(claims):
        return f"{label} · not measurable"
    paper = [v for c, v in zip(claims["claims"], verdicts(claims["claims"]), strict=True)
             if c["kind"] == "paper"]  # fmt: skip
    if not paper:
        return f"{label} · no paper claim"
    n = Counter(paper)
    text = ", ".join([f"{n['passed']}/{len(paper)} passed"]
                     + [f"{n[v]} {v}" for v in ("failed", "inconclusive", "void") if n[v]])
    control = claims.get("control", "none") != "none"
    return f"{label} · {text}" + (" (negative control)" if control else "")


def _link(text: str, path: str, content: str = "img") -> str:
    """An rST link that opens ``path`` (a result of the report: a picture, ``content="img"``, or
    an HTML page, ``"html"``) in the report's main panel and its caption in the side panel."""
    js = (
        f"javascript:void(app.setView({{navbarMode:'resultinfo',resultPath:'{path}',"
        f"content:'{content}',contentPath:results['{path}'].data_uri}}))"
    )
    return f"`{text} <{js}>`__"


def _cell(text, role: str, marked: bool) -> str:
    """A table cell, coloured by ``role`` (passed, failed, inconclusive, void) when ``marked``."""
    return f":{role}:`{text}`" if marked else str(text)


def _table_start() -> list[str]:
    return [".. list-table::", "   :header-rows: 1", "   :widths: auto", "   :class: landing", ""]


def _per_paper(summary: pd.DataFrame) -> list[str]:
    """The counts per paper (:func:`attnbias.claims.summary.counts`) as an rST table: paper claims
    passed / failed / inconclusive / void, then the positive controls (where any), regime and
    sanity checks passed out of their total."""
    per = counts(summary, ["paper"])
    controls = bool(per.control_total.sum())
    head = ["paper", "paper claims passed", "failed", "inconclusive", "void",
            *(["positive controls"] if controls else []), "regime checks", "sanity checks"]
    lines = ["**Per paper**", "", *_table_start()]
    lines += [f"   {'*' if i == 0 else ' '} - {h}" for i, h in enumerate(head)]
    for r in per.itertuples():
        figures = ", ".join(x.split(" ", 1)[-1] for x in r.not_measurable.split(", "))
        void = f"{r.paper_void}; {figures} not measurable" if r.not_measurable else (
            str(r.paper_void))  # fmt: skip
        cells = [
            r.paper,
            _cell(f"{r.paper_passed}/{r.paper_total}", "passed", r.paper_passed > 0),
            _cell(r.paper_failed, "failed", r.paper_failed > 0),
            _cell(r.paper_inconclusive, "inconclusive", r.paper_inconclusive > 0),
            _cell(void, "void", void != "0"),
            *([_cell(f"{r.control_passed}/{r.control_total}", "failed",
                     r.control_passed < r.control_total)] if controls else []),
            _cell(f"{r.regime_passed}/{r.regime_total}", "failed", r.regime_failed > 0),
            _cell(f"{r.sanity_passed}/{r.sanity_total}", "failed", r.sanity_failed > 0),
        ]  # fmt: skip
        lines += [f"   {'*' if i == 0 else ' '} - {c}" for i, c in enumerate(cells)]
    return [*lines, ""]


def _rows(summary: pd.DataFrame | None, robust: pd.DataFrame | None) -> list[tuple[str, str]]:
    """(paper, figure) of every figure of either table: the summary's order, else reading order."""
    if summary is not None:
        return list(dict.fromkeys(zip(summary.paper, summary.figure, strict=True)))
    papers = list(dict.fromkeys(robust.paper))
    keys = set(zip(robust.paper, robust.figure, strict=True))
    return sorted(keys, key=lambda k: (papers.index(k[0]), natural_key(k[1])))


def landing_rst(
    summary: pd.DataFrame | None,
    robustness: pd.DataFrame | None = None,
    robustness_headline: str | None = None,
    png: str | None = None,
    every_claim: str | None = None,
    about: str | None = None,
) -> str:
    """The landing page (reStructuredText).

    Parameters
    ----------
    summary : DataFrame or None
        The claims summary (:func:`attnbias.claims.summary.read_summary`), or None when the run
        has none (a report of the robustness target alone).
    robustness : DataFrame or None
        The robustness table (:func:`attnbias.claims.robustness.robustness_table`, as read back
        from its CSV), or None before ``snakemake robustness`` has run.
    robustness_headline : str, optional
        Its headline (:func:`attnbias.claims.robustness.headline`).
    png : str, optional
        The report path of a figure's picture, with ``{paper}`` and ``{fig}`` fields: each figure
        links to it.
    every_claim : str, optional
        The report path of the page of every claim
        (:func:`attnbias.claims.summary_html.summary_html`), linked from the text.
    about : str, optional
        What the run is when it is not the preset's reference run (:meth:`attnbias.run.Run.label`),
        said first.
    """
    lines = [_STYLE, "What holds", "==========", ""]
    if about:
        lines += [
            f"**This run: {about}** — not the preset's reference run.  Its figures and claims "
            "are those the change touches and any built here; ``compare.md`` in its folder "
            "(``snakemake compare`` with the same settings) sets them beside the reference run's.",
            "",
        ]
    if summary is not None:
        lines += [f"**{headline(summary)}**", ""]
        table = _link("every claim", every_claim, "html") if every_claim else "every claim"
        lines += [
            f"*Inconclusive*: {INCONCLUSIVE_MEANING}.  *Void*: {VOID_MEANING}.  Evidence is what "
            "passed on valid runs only.  The table of "
            f"{table} (statement, measured value, threshold, verdict; the failed, inconclusive "
            "and void claims first) is under *0 – Claims summary*; each figure's caption names "
            "its claims that did not pass, with the reason.",
            "",
        ]
    if robustness_headline:
        lines += [f"**Over seeds.**  {robustness_headline.strip()}", ""]
    if summary is None and robustness is None:
        return "\n".join(lines + ["No claim has been checked in this run yet.", ""])
    per_fig = (
        counts(summary, ["paper", "figure"]).set_index(["paper", "figure"])
        if summary is not None
        else None
    )
    seeds = figure_summary(robustness) if robustness is not None else {}
    if summary is not None:
        lines += _per_paper(summary)
    head = ["paper", "figure"]
    if per_fig is not None:
        head += ["paper claims passed", "failed", "inconclusive", "void (the failed check)",
                 "regime checks", "sanity checks"]
    if robustness is not None:
        head += ["paper claims over seeds (—: not in the robustness run)"]
    lines += ["**Per figure**", ""] if summary is not None else []
    lines += _table_start()
    lines += [f"   {'*' if i == 0 else ' '} - {h}" for i, h in enumerate(head)]
    for paper, fig in _rows(summary, robustness):
        cells = [paper, _link(fig, png.format(paper=paper, fig=fig)) if png else fig]
        if per_fig is not None:
            r = per_fig.loc[(paper, fig)]
            void = (
                "all: not measurable" if r.not_measurable
                else f"{r.paper_void} ({r.void_by})" if r.paper_void else "0"
            )  # fmt: skip
            cells += [
                _cell(f"{r.paper_passed}/{r.paper_total}", "passed", r.paper_passed > 0),
                _cell(r.paper_failed, "failed", r.paper_failed > 0),
                _cell(r.paper_inconclusive, "inconclusive", r.paper_inconclusive > 0),
                _cell(void, "void", void != "0"),
                _cell(f"{r.regime_passed}/{r.regime_total}", "failed", r.regime_failed > 0),
                _cell(f"{r.sanity_passed}/{r.sanity_total}", "failed", r.sanity_failed > 0),
            ]
        if robustness is not None:
            cells.append(seeds.get((paper, fig), "—"))
        lines += [f"   {'*' if i == 0 else ' '} - {c}" for i, c in enumerate(cells)]
    return "\n".join(lines) + "\n"


def write_landing(path, summary_csv=None, robustness_csv=None, png=None, about=None) -> str:
    """Write :func:`landing_rst` of the tables that exist (the claims summary's CSV, the
    robustness summary's CSV with the seeds it covers beside it,
    :func:`attnbias.claims.robustness.write_robustness`); return the text."""
    summary = read_summary(summary_csv) if summary_csv and Path(summary_csv).is_file() else None
    robust, head = None, None
    seeds = Path(robustness_csv or "").with_suffix(".json")
    if robustness_csv and Path(robustness_csv).is_file() and seeds.is_file():
        robust = pd.read_csv(robustness_csv, keep_default_na=False)
        head = robust_headline(robust, json.loads(seeds.read_text())["seeds"])
    html = str(Path(summary_csv).with_suffix(".html")) if summary is not None else None
    text = landing_rst(summary, robust, head, png, html, about)
    Path(path).write_text(text)
    return text
