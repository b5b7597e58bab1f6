"""The claims summary table (all papers), its report pages and the strict gate.

Counts are kept apart by kind (:data:`attnbias.claims.core.KINDS`) and by verdict
(:func:`attnbias.claims.core.verdicts`): **paper** claims are the evidence and come first, counted
passed / failed / inconclusive / void (inconclusive: judged over seeds that did not resolve them;
void: their figure's run failed a sanity check, so they are neither);
**sanity** checks (the run is valid) are counted separately, and **identities** (true by
construction) are listed but never counted.  Papers keep the order of the claim files given (the
workflow's figure table); figures within a paper are in reading order
(:func:`attnbias.io.natural_key`: fig1a, …, fig9b, fig10).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from ..io import lock_provenance, natural_key
from .caption import informative, parse_value, short_value, shorten_numbers, unicode_math
from .core import KINDS, NOT_MEASURABLE, VERDICTS, reason, verdicts, void_causes, void_checks

COLUMNS = [
    "paper", "figure", "preset", "control", "kind", "claim", "statement", "value", "threshold",
    "verdict", "reason", "void_by",
]  # fmt: skip
KIND_LABEL = {"paper": "Paper claims", "control": "Positive controls", "regime": "Regime checks",
              "sanity": "Sanity checks", "identity": "Identities"}  # fmt: skip
KIND_MEANING = {
    "paper": "a statement the paper makes, measured on this run: the reproduction evidence "
    "(only where it passed on a valid run in the regime)",
    "control": "a paper claim's test applied to the reference the paper names as showing the "
    "effect (e.g. AdamW for 'resembling Adam'); a paper claim that does not pass while its control "
    "does not either is void (not testable at this budget); never evidence",
    "regime": "the experiment reached the regime in which the paper's mechanism acts (fixed in "
    "advance from the mechanism); a failed one voids its figure's paper claims",
    "sanity": "the run is valid (trained, converged, solver feasible and accurate, hypotheses "
    "met); not evidence for the paper",
    "identity": "true by construction for any input (kept only to document a plotted bound); "
    "never counted",
}
VOID_MEANING = (
    "a paper claim of a figure whose run failed a sanity check (the run is not valid) or a regime "
    "check (the experiment has not reached the regime the paper's mechanism needs), or whose "
    "positive control fails its test too (not testable at this budget); the check is named with "
    "it, and the claim is neither a pass nor a fail"
)
INCONCLUSIVE_MEANING = (
    "a paper claim whose seeds disagree more than chance allows (or whose "
    "seed mean contradicts them): the effect is not resolved from the draw-to-draw noise, so it "
    "is neither a pass nor a fail"
)
# how a verdict is marked in the per-claim listings (counts say the words)
MARK = {"passed": "PASS", "failed": "FAIL", "inconclusive": "INCONCLUSIVE", "void": "VOID"}


def _full(v) -> str:
    """A claim's value as the CSV keeps it: full precision (JSON; a float as Python writes it)."""
    if isinstance(v, float):
        return repr(v)
    return json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v


def shown(value: str, threshold) -> str:
    """A value of the table (:func:`summary_table`, full precision) as the pages show it: to 4
    significant digits, kept on its side of the threshold
    (:func:`attnbias.claims.caption.short_value`)."""
    return short_value(parse_value(value), threshold)


def _measured(r) -> str:
    """"measured 0.9988, threshold > 0.999" of a row, or for a structural claim (no threshold of
    its own, "true") "does not hold (value 1)"."""
    value = shown(r.value, r.threshold)
    if str(r.threshold) in ("true", "True"):
        return f"{'holds' if r.verdict == 'passed' else 'does not hold'} (value {value})"
    return f"measured {value}, threshold {_words(r.threshold)}"


def _words(text) -> str:
    """A statement, threshold or reason as the pages show it: long decimals shortened, TeX-like
    math in Unicode (:func:`attnbias.claims.caption.unicode_math`)."""
    return unicode_math(shorten_numbers(str(text)))


def summary_table(claim_files) -> pd.DataFrame:
    """One row per claim (columns :data:`COLUMNS`; its value at full precision, JSON), with its
    verdict (passed / failed / inconclusive / void), the reason for it in words and, for a void
    one, the failed checks (sanity, regime or positive control) that void it (``void_by``).
    Papers in the order of ``claim_files``, figures in reading order, and within a figure the
    kinds in the order of :data:`KINDS` (paper claims first, identities last)."""
    rows, papers = [], {}
    for f in claim_files:
        doc = json.loads(Path(f).read_text())
        for c in doc["claims"]:
            if c.get("kind") not in KINDS:
                raise ValueError(f"{f}: claim {c.get('id')!r} has no valid kind ({KINDS})")
        papers.setdefault(doc["paper"], len(papers))
        causes, checks = void_causes(doc["claims"]), void_checks(doc["claims"])
        for c, verdict, cause, by in zip(doc["claims"], verdicts(doc["claims"]), causes, checks,
                                         strict=True):  # fmt: skip
            rows.append(
                {
                    "paper": doc["paper"],
                    "figure": doc["figure"],
                    "preset": doc.get("preset"),
                    "control": doc.get("control", "none"),
                    "kind": c["kind"],
                    "claim": c["id"],
                    "statement": c["statement"],
                    "value": _full(c["value"]),
                    "threshold": c["threshold"],
                    "verdict": verdict,
                    "reason": reason(c, verdict, cause or ()),
                    "void_by": by if verdict == "void" else "",
                }
            )
    rank = {k: i for i, k in enumerate(KINDS)}
    rows.sort(key=lambda r: (papers[r["paper"]], natural_key(r["figure"]), rank[r["kind"]]))
    return pd.DataFrame(rows, columns=COLUMNS)


# the kinds counted, each by its verdicts (identities are listed, never counted)
COUNTED = (
    ("paper", ("passed", "failed", "inconclusive", "void")),
    ("control", ("passed", "failed", "inconclusive", "void")),
    ("regime", ("passed", "failed")),
    ("sanity", ("passed", "failed")),
)


def counts(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group (in the table's order): paper claims and positive controls passed / failed /
    inconclusive / void / total, regime and sanity checks passed / failed / total (:data:`COUNTED`),
    the number of identities, the failed sanity checks that void
    paper claims (``void_by``), and the figures not measurable at their settings (a failed sanity
    check ``measurable``: their claims were never computed, so every paper claim of theirs is void
    and none is counted)."""
    out = []
    for key, g in df.groupby(by, sort=False) if by else [((), df)]:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True))
        for kind, verdict_names in COUNTED:
            k = g[g.kind == kind]
            for v in verdict_names:
                row[f"{kind}_{v}"] = int((k.verdict == v).sum())
            row[f"{kind}_total"] = len(k)
        row["identities"] = int((g.kind == "identity").sum())
        nm = g[(g.kind == "sanity") & (g.claim == NOT_MEASURABLE) & (g.verdict == "failed")]
        void_by = [*(x for x in g.void_by if x), *([NOT_MEASURABLE] if len(nm) else [])]
        row["void_by"] = ", ".join(dict.fromkeys(void_by))
        row["not_measurable"] = ", ".join(dict.fromkeys(f"{p} {f}" for p, f in
                                                        zip(nm.paper, nm.figure, strict=True)))
        out.append(row)
    cols = [*by, *(f"{k}_{v}" for k, names in COUNTED for v in (*names, "total")),
            "identities", "void_by", "not_measurable"]  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def _paper_cell(row) -> str:
    """E.g. "3/5 passed, 1 failed, 1 inconclusive, 0 void", and the figures not measurable
    (paper claims void, uncounted)."""
    text = (
        f"{row['paper_passed']}/{row['paper_total']} passed, {row['paper_failed']} failed, "
        f"{row['paper_inconclusive']} inconclusive, {row['paper_void']} void"
    )
    if row["not_measurable"]:
        text += f"; not measurable: {row['not_measurable']} (every paper claim void, uncounted)"
    return text


def _sanity_cell(row, kind: str = "sanity") -> str:
    return f"{row[kind + '_passed']}/{row[kind + '_total']} passed, {row[kind + '_failed']} failed"


def _control_cell(row) -> str:
    """Positive controls: "1/2 passed, 1 failed" (with the inconclusive and void, where any)."""
    return f"{row['control_passed']}/{row['control_total']} passed, " + ", ".join(
        f"{row['control_' + v]} {v}" for v in ("failed", "inconclusive", "void")
        if v == "failed" or row["control_" + v]
    )  # fmt: skip


def headline(df: pd.DataFrame) -> str:
    """E.g. "Paper claims: 120/131 passed, 3 failed, 2 inconclusive, 6 void.  Regime checks:
    20/21 passed, 1 failed.  Sanity checks: 40/42 passed, 2 failed.  Positive controls: 2/4
    passed, 2 failed.  Identities (not evidence): 5." — the evidence first, never pooled with the
    rest (regime checks and positive controls are named only where the table has any); a figure
    not measurable at its settings is named."""
    c = counts(df, []).iloc[0]
    return (
        f"{KIND_LABEL['paper']}: {_paper_cell(c)}.  "
        + (f"{KIND_LABEL['regime']}: {_sanity_cell(c, 'regime')}.  " if c["regime_total"] else "")
        + f"{KIND_LABEL['sanity']}: {_sanity_cell(c)}.  "
        + (f"{KIND_LABEL['control']}: {_control_cell(c)}.  " if c["control_total"] else "")
        + f"Identities (not evidence): {int(c['identities'])}."
    )


def _md_row(cells) -> str:
    return "| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |"


def _shows_line(shows) -> str:
    """Which run the claims are from; ``shows["overrides"]``, if any: the settings that differ
    from the preset's reference run."""
    over = shows.get("overrides") or []
    lock = lock_provenance()
    return (
        f"Results of the **{shows['preset']}** preset, control `{shows['control']}`, seed shift "
        f"{shows['seed']}, in `{shows['folder']}/`."
        + (f"  Settings that differ from the preset: {'; '.join(f'`{o}`' for o in over)}."
           if over else "")
        + (f"  Environment: `{lock['lock']}`, sha256 {lock['lock_sha256'][:16]}… (each data "
           "file's JSON records the lock it was made with, `provenance.lock_sha256`)."
           if lock["lock"] else "  Environment: no lock found (an install outside the repository).")
    )  # fmt: skip


def _controlled(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(f"{r.paper} {r.figure}" for r in df.itertuples()
                              if r.control != "none"))  # fmt: skip


def _control_line(controlled: list[str]) -> str:
    return (
        f"**NEGATIVE CONTROL RUN** (`--config control=null`) for {len(controlled)} figures "
        f"({', '.join(controlled)}): their data were made with the paper's mechanism removed, so "
        "their paper claims are EXPECTED TO FAIL and their sanity checks to pass (see "
        "`violations` in the strict gate)."
    )


# A void paper claim's cause, by the kind of the check that voids it (core.void_checks): what that
# check's failure means for the claims it voids.
VOID_BY = {
    "sanity": ("sanity check", "the run is not valid"),
    "regime": ("regime check", "the run has not reached the regime the paper's mechanism needs"),
    "control": ("positive control", "the same test on the paper's reference does not pass "
                "either: not testable at this budget"),
}  # fmt: skip


def void_groups(df: pd.DataFrame) -> list[dict]:
    """The void paper claims of ``df`` (:func:`summary_table`) grouped by figure and by the checks
    that void them, in the table's order: ``paper``, ``figure``, ``by`` (the kind of check:
    sanity, regime or control, :data:`VOID_BY`), ``checks`` (their rows, with statement, value and
    threshold) and ``claims`` (the ids of the void claims)."""
    rows = {(r.paper, r.figure, r.claim): r for r in df.itertuples()}
    out = []
    for (paper, figure, by), g in df[df.verdict == "void"].groupby(
        ["paper", "figure", "void_by"], sort=False
    ):
        checks = [rows[(paper, figure, c)] for c in by.split(", ") if (paper, figure, c) in rows]
        kind = checks[0].kind if checks else "sanity"
        out.append(dict(paper=paper, figure=figure, by=kind if kind in VOID_BY else "sanity",
                        checks=checks, claims=list(g.claim)))  # fmt: skip
    return out


def _void_line(v: dict) -> str:
    """A void group (:func:`void_groups`) in Markdown: the figure, the claims it voids, the failed
    checks with what they measured, and what that means."""
    label, meaning = VOID_BY[v["by"]]
    checks = "; ".join(
        f"`{c.claim}` {c.verdict}{' too' if v['by'] == 'control' else ''} ({_words(c.statement)}: "
        f"{_measured(c)})" for c in v["checks"]
    )  # fmt: skip
    plural = "s" if len(v["checks"]) > 1 else ""
    return (f"- **{v['paper']} {v['figure']}**: " + ", ".join(f"`{c}`" for c in v["claims"])
            + f" — {label}{plural} {checks}: {meaning}")  # fmt: skip


def _why(r) -> str:
    """A row's reason when it says more than its value and threshold (its seeds, its own words),
    else ""."""
    return _words(r.reason) if informative({"threshold": r.threshold}, r.reason) else ""


def _kind_counts(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, bool]:
    """:func:`counts`, and whether any positive control is among them (its column is shown)."""
    return counts(df, by), bool((df.kind == "control").any())


def write_summary(claim_files, md_path, csv_path, shows=None, html_path=None) -> int:
    """Write the summary (``.md``, ``.csv`` and, with ``html_path``, the page the report shows
    inline, :func:`summary_html`); return the number of failed claims that gate the run (paper
    and sanity; a failed identity is a bug and gates too, see :func:`gate`; a void paper claim is
    counted by the failed sanity check that voids it).  ``shows``: which run the claims are from
    (``preset``, ``control``, ``seed``, ``folder``), said in the summary's first line.

    The Markdown reads in the order of the HTML page: the headline, the counts per paper, then
    the claims that did not pass (failed, inconclusive, void with the check that voids them),
    then the counts per figure and every claim.  Values are shown to 4 significant digits; the
    CSV keeps them at full precision."""
    df = summary_table(claim_files)
    df.to_csv(csv_path, index=False)
    failed = df[df.verdict == "failed"]
    controlled = _controlled(df)
    per_paper, with_controls = _kind_counts(df, ["paper"])
    lines = [
        "# Claims summary",
        "",
        *([_shows_line(shows), ""] if shows else []),
        *([_control_line(controlled), ""] if controlled else []),
        f"**{headline(df)}**",
        "",
        *(f"- **{KIND_LABEL[k].lower()}**: {KIND_MEANING[k]}" for k in KINDS),
        f"- **inconclusive**: {INCONCLUSIVE_MEANING}",
        f"- **void**: {VOID_MEANING}",
        "",
        "## Per paper",
        "",
        _md_row(["paper", "paper claims", *(["positive controls"] if with_controls else []),
                 "regime checks", "sanity checks", "identities (not counted)"]),  # fmt: skip
        "|---|---|---|---|---|" + ("---|" if with_controls else ""),
    ]
    for _, r in per_paper.iterrows():
        lines.append(_md_row([r.paper, _paper_cell(r),
                              *([_control_cell(r)] if with_controls else []),
                              _sanity_cell(r, "regime"), _sanity_cell(r),
                              r.identities]))  # fmt: skip
    lines.append("")
    for kind in KINDS:
        f = failed[failed.kind == kind]
        if not len(f):
            continue
        lines += [f"## Failed {KIND_LABEL[kind].lower()}", ""]
        for r in f.itertuples():
            why = _why(r)
            lines.append(
                f"- **{r.paper} {r.figure} `{r.claim}`**: {_words(r.statement)} — {_measured(r)}"
                + (f"; {why}" if why else "")
            )
        lines.append("")
    unresolved = df[df.verdict == "inconclusive"]
    if len(unresolved):
        lines += ["## Inconclusive paper claims (the seeds do not resolve them)", ""]
        lines += [f"- **{r.paper} {r.figure} `{r.claim}`**"
                  + ("" if r.kind == "paper" else f" ({KIND_LABEL[r.kind].lower()[:-1]})")
                  + f": {_words(r.statement)} — threshold {_words(r.threshold)}; {_why(r)}"
                  for r in unresolved.itertuples()]  # fmt: skip
        lines.append("")
    void = void_groups(df)
    nm = counts(df, []).iloc[0]["not_measurable"]
    if void or nm:
        lines += ["## Void paper claims (their figure failed a sanity or regime check, or their "
                  "positive control fails too)", ""]
        if nm:
            lines.append(
                f"- **{nm}**: not measurable at its settings (sanity check `{NOT_MEASURABLE}`): "
                "no paper claim was computed, every one is void"
            )
        lines += [_void_line(v) for v in void]
        lines.append("")
    per_fig, _ = _kind_counts(df, ["paper", "figure"])
    lines += [
        "## Per figure",
        "",
        _md_row(["paper", "figure", "preset", "control", "paper claims",
                 *(["positive controls"] if with_controls else []), "regime checks",
                 "sanity checks", "void by (failed checks)", "identities (not counted)"]),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if with_controls else ""),
    ]  # fmt: skip
    first = df.groupby(["paper", "figure"])[["preset", "control"]].first()
    for _, r in per_fig.iterrows():
        f = first.loc[(r.paper, r.figure)]
        lines.append(
            _md_row([r.paper, r.figure, f.preset, f.control, _paper_cell(r),
                     *([_control_cell(r)] if with_controls else []),
                     _sanity_cell(r, "regime"), _sanity_cell(r), r.void_by, r.identities])
        )  # fmt: skip
    lines.append("")
    cols = [c for c in COLUMNS if c not in ("preset", "control")]
    lines += ["## All claims", "", _md_row(cols), "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cell = {"verdict": MARK[r.verdict], "value": shown(r.value, r.threshold),
                "statement": _words(r.statement), "threshold": _words(r.threshold),
                "reason": _words(r.reason)}  # fmt: skip
        lines.append(_md_row([cell.get(c, r[c]) for c in cols]))
    Path(md_path).write_text("\n".join(lines) + "\n")
    if html_path is not None:
        Path(html_path).write_text(summary_html(df, shows))
    return len(failed)


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
                       + _td(_words(r.reason.removeprefix("inconclusive: "))) + "</tr>")
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


def read_summary(summary_csv) -> pd.DataFrame:
    """The summary CSV as written: no NA parsing (the control's value "null" is a word here)."""
    return pd.read_csv(summary_csv, keep_default_na=False)


def violations(df: pd.DataFrame) -> pd.DataFrame:
    """The claims that make a strict run fail.  Normally every failed claim (a failed identity can
    only mean a bug); a void paper claim is not one itself: the failed sanity check that voids it
    is; an inconclusive one is not either (neither passed nor failed: counted apart).  For a
    figure made under the negative control (``control`` not "none") the expectation of
    its paper claims is reversed: a paper claim that PASSES there survives the removal of the
    paper's mechanism, so it is not evidence; its sanity checks must still pass."""
    control = df["control"] if "control" in df else pd.Series("none", df.index)
    controlled = control != "none"
    passed, failed = df["verdict"] == "passed", df["verdict"] == "failed"
    paper = df["kind"] == "paper"
    # a positive control that fails is a record of the budget (it voids its claims), not a fault
    check = ~df["kind"].isin(["paper", "control"])
    bad = (~controlled & failed & (paper | check)) | (controlled & paper & passed) | (
        controlled & check & failed)
    return df[bad]


def gate(summary_csv, ok_path) -> None:
    """claims_strict: fail on any failed paper claim or sanity check (and on a failed identity,
    which can only mean a bug); under the negative control, on a paper claim that passes or a
    sanity check that fails (:func:`violations`).  The message lists them by kind, and counts the
    inconclusive and the void paper claims apart (the failed sanity checks that void claims are
    among the violations)."""
    df = read_summary(summary_csv)
    if "kind" not in df or set(df.get("verdict", [])) - set(VERDICTS):
        raise SystemExit(
            f"claims_strict: {summary_csv} has no 'kind' column or verdicts other than "
            f"{' / '.join(VERDICTS)} (stale summary)"
        )
    bad = violations(df)
    if len(bad):
        msg = []
        for kind in KINDS:
            for r in bad[bad.kind == kind].itertuples():
                why = (
                    "passes under the negative control"
                    if getattr(r, "control", "none") not in ("none", None) and r.verdict == "passed"
                    else "failed"
                )
                msg.append(
                    f"  [{kind}] {r.paper} {r.figure} {r.claim} {why}: "
                    f"{shown(str(r.value), r.threshold)} (threshold {_words(r.threshold)})"
                )
        unresolved = df[df.verdict == "inconclusive"]
        if len(unresolved):
            msg.append(
                f"  and {len(unresolved)} paper claim(s) inconclusive (neither passed nor failed: "
                "their seeds do not resolve them): "
                + "; ".join(f"{r.paper} {r.figure} {r.claim}" for r in unresolved.itertuples())
            )
        void = df[df.verdict == "void"]
        if len(void):
            msg.append(
                f"  and {len(void)} paper claim(s) void (neither passed nor failed: their figure "
                "failed a sanity check): "
                + "; ".join(f"{p} {f} ({', '.join(g.claim)}; void by {g.void_by.iloc[0]})"
                            for (p, f), g in void.groupby(["paper", "figure"], sort=False))
            )  # fmt: skip
        by = ", ".join(f"{(bad.kind == k).sum()} {k}" for k in KINDS if (bad.kind == k).any())
        what = "failed" if "control" not in df or (df.control == "none").all() else (
            "against expectation"
        )
        raise SystemExit(f"claims_strict: {len(bad)} claim(s) {what} ({by}):\n" + "\n".join(msg))
    Path(ok_path).write_text(headline(df) + "\n")
