"""The claims page as one self-contained HTML page (:func:`summary_html`, shown inline by the
report), from the summary table of :mod:`attnbias.claims.summary`: the same sections in the same
order as ``summary.md``."""

from __future__ import annotations

import html

import pandas as pd

from .core import KINDS, NOT_MEASURABLE
from .summary_table import (  # noqa: F401
    INCONCLUSIVE_MEANING,
    KIND_LABEL,
    KIND_MEANING,
    MARK,
    VOID_BY,
    VOID_MEANING,
    _control_line,
    _controlled,
    _kind_counts,
    _shows_line,
    _why,
    _words,
    counts,
    headline,
    shown,
    void_groups,
)

# The page is shown in the report's main panel, half the window beside the caption (800 px of a
# 1,600 px screen): every table takes the panel's width with fixed columns and wraps its cells
# (long ids, value lists and thresholds break anywhere), so nothing scrolls sideways.
_CSS = """body{font-family:system-ui,sans-serif;font-size:13px;margin:12px;color:#111;
line-height:1.35}h2{margin:4px 0 6px}h3{margin:18px 0 4px}p{margin:6px 0}
table{border-collapse:collapse;margin:6px 0 14px;table-layout:fixed;width:100%}
th,td{border:1px solid #ccc;padding:3px 5px;vertical-align:top;text-align:left;
overflow-wrap:anywhere}th{background:#eee;position:sticky;top:0}
td.passed{background:#e3f4e3}td.failed{background:#f9d6d5;font-weight:bold}
td.inconclusive{background:#fdf0c8}td.void{background:#e4e4e4;
color:#555;font-style:italic}tr.sanity td:first-child,tr.identity td:first-child{color:#555}
span.kind{display:block;color:#555;font-size:11px}span.thr{color:#555}code{font-size:12px}
nav{margin:6px 0 10px;color:#555}nav a{margin-right:10px}details{margin:6px 0;color:#333}
details ul{margin:4px 0}td.num{text-align:right;font-variant-numeric:tabular-nums}"""
# The page's tables, (heading, share of the width in %) per column.  Per paper and per figure:
# the counts of paper claims by verdict, then the checks.  Of the claims that did not pass and of
# every claim: the figure's paper and id in one cell, the claim's kind under its id, the measured
# value then its threshold (bracketed).  Of the void claims: the checks that void them.
PER_PAPER_COLUMNS = [
    ("paper", 14), ("paper claims passed", 14), ("failed", 10), ("inconclusive", 14),
    ("void", 10), ("positive controls passed", 13), ("regime checks passed", 12),
    ("sanity checks passed", 13),
]  # fmt: skip
PER_FIGURE_COLUMNS = [
    ("paper", 12), ("figure", 8), ("paper claims passed", 11), ("failed", 8),
    ("inconclusive", 14), ("void", 8), ("regime checks passed", 10),
    ("sanity checks passed", 10), ("void by (failed checks)", 19),
]  # fmt: skip
NOT_PASSED_COLUMNS = [
    ("figure", 11), ("claim", 18), ("statement", 27), ("measured (threshold)", 16),
    ("reason", 28),
]  # fmt: skip
VOID_COLUMNS = [
    ("figure", 11), ("void claims", 25), ("voided by (the failed check)", 22),
    ("what the check measured (threshold)", 42),
]  # fmt: skip
EVERY_CLAIM_COLUMNS = [
    ("figure", 11), ("claim", 18), ("verdict", 12), ("statement", 27),
    ("measured (threshold)", 16), ("reason", 16),
]  # fmt: skip


def _fit(columns):
    """Columns with their shares of the width scaled to add up to 100 % again (one left out)."""
    total = sum(w for _, w in columns)
    widths = [w * 100 // total for _, w in columns]
    widths[0] += 100 - sum(widths)
    return [(c, w) for (c, _), w in zip(columns, widths, strict=True)]


def _td(text, cls="") -> str:
    return f"<td class='{cls}'>{html.escape(str(text))}</td>" if cls else (
        f"<td>{html.escape(str(text))}</td>"
    )


def _table_head(columns) -> str:
    """A table's start: its column widths (fixed: the cells wrap, the table keeps the page's
    width) and its header row."""
    cols = "".join(f"<col style='width:{w}%'>" for _, w in columns)
    head = "".join(f"<th>{html.escape(c)}</th>" for c, _ in columns)
    return f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>"


def _breakable(claim_id: str) -> str:
    """A claim id in HTML that a narrow cell breaks after its underscores, not inside a word."""
    return html.escape(claim_id).replace("_", "_<wbr>")


def _plain(markdown: str) -> str:
    """A line of the Markdown summary as HTML text (its ** and ` marks dropped)."""
    return html.escape(markdown.replace("**", "").replace("`", ""))


def _claim_cell(r) -> str:
    return (f"<td><code>{_breakable(r.claim)}</code> "
            f"<span class='kind'>{html.escape(r.kind)}</span></td>")  # fmt: skip


def _measured_cell(r) -> str:
    e = html.escape
    return (f"<td>{e(shown(r.value, r.threshold))} "
            f"<span class='thr'>({e(_words(r.threshold))})</span></td>")  # fmt: skip


def _count_row(r, first_cells: list[str], controls: bool | None) -> str:
    """The cells of a row of counts (:func:`counts`): paper claims by verdict, then the positive
    controls (where ``controls``), regime and sanity checks passed out of their total.
    ``controls`` None: a figure's row (no positive controls' column; a figure not measurable says
    so in its void cell)."""
    cells = "".join(_td(x) for x in first_cells)
    cells += _td(f"{r.paper_passed}/{r.paper_total}", "passed" if r.paper_passed else "")
    cells += _td(r.paper_failed, "failed" if r.paper_failed else "")
    cells += _td(r.paper_inconclusive, "inconclusive" if r.paper_inconclusive else "")
    if not r.not_measurable:
        cells += _td(r.paper_void, "void" if r.paper_void else "")
    elif controls is None:  # a figure's row
        cells += _td("all: not measurable", "void")
    else:  # a paper's row: its figures not measurable by their ids
        figures = ", ".join(x.split(" ", 1)[-1] for x in r.not_measurable.split(", "))
        cells += _td(f"{r.paper_void}; {figures} not measurable", "void")
    if controls:
        cells += _td(f"{r.control_passed}/{r.control_total}",
                     "failed" if r.control_total > r.control_passed else "")  # fmt: skip
    for kind in ("regime", "sanity"):
        cells += _td(f"{r[kind + '_passed']}/{r[kind + '_total']}",
                     "failed" if r[kind + "_failed"] else "")  # fmt: skip
    return cells


def _resolve_cell(r) -> str:
    """An inconclusive claim's reason, then its seeds to resolve (an estimate) and the command."""
    e = html.escape
    why = e(_words(r.reason.removeprefix("inconclusive: ")))
    more = getattr(r, "to_resolve", "") or ""
    if more:
        text, _, cmd = more.partition(": `")
        why += f"<br><i>{e(text)}</i>" + (f": <code>{e(cmd.rstrip('`'))}</code>" if cmd else "")
    return f"<td>{why}</td>"


def summary_html(df: pd.DataFrame, shows=None) -> str:
    """The summary as one self-contained HTML page (the report shows it inline), in the order a
    reader needs it: headline; the counts per paper; the claims that did not pass — failed,
    inconclusive, then void with the check that voids each group (sanity, regime or positive
    control, :func:`void_groups`); the counts per figure; then every claim with its verdict (six
    columns, :data:`EVERY_CLAIM_COLUMNS`).  Numbers to 4 significant digits, math in Unicode
    (:func:`attnbias.claims.caption.unicode_math`); what the kinds and verdicts mean folded under
    the headline.  Its tables fit the width of the report's panel: fixed columns, cells wrapped."""
    e = html.escape
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Claims summary</title>",
        f"<style>{_CSS}</style></head><body><h2>Claims summary</h2>",
    ]
    if shows:
        out.append(f"<p>{_plain(_shows_line(shows))}</p>")
    controlled = _controlled(df)
    if controlled:
        out.append(f"<p>{_plain(_control_line(controlled))}</p>")
    failed, unresolved = df[df.verdict == "failed"], df[df.verdict == "inconclusive"]
    void = void_groups(df)
    nm = counts(df, []).iloc[0]["not_measurable"]
    n_void = int((df.verdict == "void").sum())
    sections = [
        ("per-paper", "Per paper"),
        *([("failed", f"Failed ({len(failed)})")] if len(failed) else []),
        *([("inconclusive", f"Inconclusive ({len(unresolved)})")] if len(unresolved) else []),
        *([("void", f"Void ({n_void})")] if void or nm else []),
        ("per-figure", "Per figure"),
        ("every-claim", f"Every claim ({len(df)})"),
    ]
    out.append(f"<p><b>{e(headline(df))}</b></p>")
    out.append("<nav>" + "".join(f"<a href='#{a}'>{e(t)}</a>" for a, t in sections) + "</nav>")
    out.append("<details><summary>What the kinds and verdicts mean</summary><ul>")
    out += [f"<li><b>{e(KIND_LABEL[k].lower())}</b>: {e(KIND_MEANING[k])}</li>" for k in KINDS]
    out += [f"<li><b>inconclusive</b>: {e(INCONCLUSIVE_MEANING)}</li>",
            f"<li><b>void</b>: {e(VOID_MEANING)}</li></ul></details>"]
    per_paper, controls = _kind_counts(df, ["paper"])
    columns = _fit([c for c in PER_PAPER_COLUMNS if controls or not c[0].startswith("positive")])
    out.append("<h3 id='per-paper'>Per paper</h3>" + _table_head(columns))
    out += [f"<tr>{_count_row(r, [r.paper], controls)}</tr>" for _, r in per_paper.iterrows()]
    out.append("</table>")
    if len(failed):
        out.append(f"<h3 id='failed'>Failed ({len(failed)})</h3>"
                   "<p>Paper claims first, then the checks; a failed check voids its figure's "
                   "paper claims (below).</p>" + _table_head(NOT_PASSED_COLUMNS))  # fmt: skip
        for r in failed.itertuples():
            out.append(f"<tr class='{r.kind}'>" + _td(f"{r.paper} {r.figure}") + _claim_cell(r)
                       + _td(_words(r.statement)) + _measured_cell(r)
                       + _td(_words(_why(r))) + "</tr>")  # fmt: skip
        out.append("</table>")
    if len(unresolved):
        out.append(f"<h3 id='inconclusive'>Inconclusive ({len(unresolved)})</h3><p>"
                   f"{e(INCONCLUSIVE_MEANING)}.</p>" + _table_head(NOT_PASSED_COLUMNS))
        for r in unresolved.itertuples():
            out.append(f"<tr class='{r.kind}'>" + _td(f"{r.paper} {r.figure}") + _claim_cell(r)
                       + _td(_words(r.statement)) + _measured_cell(r)
                       + _resolve_cell(r) + "</tr>")
        out.append("</table>")
    if void or nm:
        out.append(f"<h3 id='void'>Void ({n_void})</h3><p>Neither passed nor failed: each group "
                   "is voided by the check named (sanity: the run is not valid; regime: the run "
                   "has not reached the regime the paper's mechanism needs; positive control: the "
                   "same test on the paper's reference does not pass either).</p>"
                   + _table_head(VOID_COLUMNS))  # fmt: skip
        if nm:
            out.append("<tr>" + _td(nm) + _td("every paper claim (none computed)", "void")
                       + _td(f"sanity check {NOT_MEASURABLE}") + _td("not measurable at its "
                       "settings") + "</tr>")  # fmt: skip
        for v in void:
            label, meaning = VOID_BY[v["by"]]
            ids = ", ".join(f"<code>{_breakable(c)}</code>" for c in v["claims"])
            checks = ", ".join(f"<code>{_breakable(c.claim)}</code>" for c in v["checks"])
            what = "; ".join(
                f"{e(_words(c.statement))}: {e(shown(c.value, c.threshold))} "
                f"<span class='thr'>({e(_words(c.threshold))})</span>" for c in v["checks"]
            )  # fmt: skip
            out.append(
                f"<tr>{_td(v['paper'] + ' ' + v['figure'])}<td class='void'>{ids}</td>"
                f"<td>{e(label)} {checks} <span class='kind'>{e(meaning)}</span></td>"
                f"<td>{what}</td></tr>"
            )
        out.append("</table>")
    per_fig, _ = _kind_counts(df, ["paper", "figure"])
    out.append("<h3 id='per-figure'>Per figure</h3>" + _table_head(PER_FIGURE_COLUMNS))
    for _, r in per_fig.iterrows():
        out.append(f"<tr>{_count_row(r, [r.paper, r.figure], None)}{_td(r.void_by)}</tr>")
    out.append("</table><h3 id='every-claim'>Every claim</h3>" + _table_head(EVERY_CLAIM_COLUMNS))
    for r in df.itertuples():
        cells = (
            _td(f"{r.paper} {r.figure}") + _claim_cell(r) + _td(MARK[r.verdict], r.verdict)
            + _td(_words(r.statement)) + _measured_cell(r) + _td(_words(r.reason))
        )
        out.append(f"<tr class='{r.kind}'>{cells}</tr>")
    out.append("</table></body></html>")
    return "\n".join(out) + "\n"
