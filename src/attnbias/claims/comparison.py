"""A run beside the reference run (``snakemake compare``): for each figure a change touches, every
claim's value and verdict in both runs, joined by the claim's id (ids carry no setting values:
:mod:`attnbias.claims.ids`), each run's own statement (``cos(p_500, GMM)`` beside
``cos(p_1000, GMM)``) and threshold, and whether the verdict changed.

Written into the other run's folder: ``compare.md`` (the changed settings first, then the figures
whose claims changed verdict, then the others; each figure's table links its picture,
``compare/<paper>/<fig>.png``), ``compare.csv`` with its JSON sidecar documenting every column
(:func:`attnbias.io.save_data`), and ``compare.html`` (the report's page).  The pages show values
to 4 significant digits (:func:`attnbias.claims.caption.short_value`); the CSV to 6.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pandas as pd

from ..io import save_data
from .caption import parse_value, short_value, shorten_numbers, unicode_math
from .core import read_claims

COLUMNS = {
    "paper": "the paper (attnbias.workflow.PAPERS)",
    "figure": "the figure of that paper",
    "claim": "the claim's id, the same in both runs",
    "kind": "paper (a claim of the paper), sanity (a check that the run is valid) or identity",
    "statement": "what the claim measures, in this run's words (its settings' values)",
    "reference_statement": "what the claim measures in the reference run's words (empty: not "
    "measured there)",
    "threshold": "the claim's threshold in this run",
    "reference_threshold": "the claim's threshold in the reference run (empty: not measured there)",
    "reference_value": "the claim's value in the reference run (JSON; empty: not measured there)",
    "reference_verdict": "passed, failed, inconclusive or void in the reference run",
    "other_value": "the claim's value in this run (JSON; empty: not measured here)",
    "other_verdict": "passed, failed, inconclusive or void in this run",
    "verdict_changed": "whether the verdicts differ (a claim in one run only counts as changed)",
}


def claim_file(folder, paper: str, figure: str) -> Path:
    return Path(folder) / "claims" / paper / f"{figure}.json"


def comparison(reference, other, figures) -> pd.DataFrame:
    """One row per claim of ``figures`` ((paper, figure) pairs) in the results folders
    ``reference`` and ``other`` (:data:`COLUMNS`), the figures with a changed verdict first, each
    figure's claims in the other run's order (a claim only the reference has after them).  A
    figure whose reference claim file is missing has empty reference columns."""
    rows = []
    for paper, fig in figures:
        ref_path = claim_file(reference, paper, fig)
        ref = {c["id"]: c for c in read_claims(ref_path)["claims"]} if ref_path.exists() else {}
        oth = {c["id"]: c for c in read_claims(claim_file(other, paper, fig))["claims"]}
        for cid in [*oth, *(i for i in ref if i not in oth)]:
            r, o = ref.get(cid, {}), oth.get(cid, {})
            rows.append(
                {
                    "paper": paper,
                    "figure": fig,
                    "claim": cid,
                    "kind": (o or r)["kind"],
                    "statement": (o or r)["statement"],
                    "reference_statement": r.get("statement", ""),
                    "threshold": str((o or r)["threshold"]),
                    "reference_threshold": str(r["threshold"]) if r else "",
                    "reference_value": _value(r),
                    "reference_verdict": r.get("verdict", ""),
                    "other_value": _value(o),
                    "other_verdict": o.get("verdict", ""),
                    "verdict_changed": bool(ref) and r.get("verdict") != o.get("verdict"),
                }
            )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    changed = df.groupby(["paper", "figure"], sort=False)["verdict_changed"].transform("any")
    return df.assign(_first=~changed).sort_values("_first", kind="stable").drop(columns="_first")


def _value(claim: dict) -> str:
    """A claim's value as short JSON (floats to 6 significant digits), "" when absent."""
    if "value" not in claim:
        return ""

    def short(v):
        if isinstance(v, float):
            return float(f"{v:.6g}")
        return [short(x) for x in v] if isinstance(v, list) else v

    return json.dumps(short(claim["value"]), ensure_ascii=False)


def write_comparison(df: pd.DataFrame, about: dict, md_path, csv_path, html_path,
                     pictures=None) -> None:  # fmt: skip
    """Write the comparison ``df`` (:func:`comparison`) as Markdown, CSV (+ sidecar) and HTML.

    ``about``: ``label`` (what this run is, "custom: maxmargin.fig1.steps 500, default 1000"),
    ``reference`` and ``other`` (the folders), ``changes`` (one ``{setting, default, used}`` per
    changed setting), ``missing`` (the figures whose reference is not built) and ``build`` (the
    command that builds them).  ``pictures``: the folder of the figure pairs
    (``<pictures>/<paper>/<fig>.png``, :func:`attnbias.plotting.compare.figure_pair`), which the
    pages link, relative to themselves."""
    save_data(df, {"columns": COLUMNS, **about}, csv_path)
    rel = None
    if pictures is not None:
        rel = os.path.relpath(pictures, Path(md_path).parent)
    Path(md_path).write_text(comparison_markdown(df, about, rel))
    Path(html_path).write_text(comparison_html(df, about, rel))


def headline(df: pd.DataFrame, about: dict) -> list[str]:
    """The comparison's first lines: the changed settings, then what changed verdict."""
    lines = [
        f"**{about['other']}** ({about['label']}) beside the reference run "
        f"**{about['reference']}**.",
        "",
    ]
    lines += [f"- `{c['setting']}`: {c['default']} → **{c['used']}**" for c in about["changes"]]
    figures = df[["paper", "figure"]].drop_duplicates()
    changed = df[df.verdict_changed]
    lines += [
        "",
        f"{len(figures)} figure(s) touched by the change, {len(df)} claims: "
        f"{len(changed)} changed verdict ({(changed.kind == 'paper').sum()} paper claims).",
    ]
    if about.get("missing"):
        lines += [
            "",
            f"Not built in the reference run: {', '.join(about['missing'])}; build them "
            f"with `{about['build']}`, then compare again.",
        ]
    return lines


def _both(reference: str, other: str) -> str:
    """A statement or threshold of both runs: once where they agree, else each run's own."""
    if not reference or reference == other:
        return other
    return f"reference: {reference}; this run: {other}"


def _shown(value: str, threshold: str) -> str:
    return short_value(parse_value(value), threshold) if value != "" else ""


def _change(r) -> str:
    """This run's value minus the reference's, for two numbers (4 significant digits)."""
    a, b = parse_value(r.reference_value), parse_value(r.other_value)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        return ""
    d = b - a
    return "0" if d == 0 else f"{d:+.4g}".replace("-", "−")


def _words(text: str) -> str:
    return unicode_math(shorten_numbers(text))


def _cells(r) -> dict:
    """A row of the comparison as the pages show it: statement and threshold of each run
    (:func:`_both`), values to 4 significant digits, the change, the verdicts."""
    ref_thr = r.reference_threshold or r.threshold
    return {
        "statement": _both(_words(r.reference_statement), _words(r.statement)),
        "threshold": _both(_words(r.reference_threshold), _words(r.threshold)),
        "reference": (f"{_shown(r.reference_value, ref_thr)} {r.reference_verdict}"
                      if r.reference_verdict else "—"),
        "other": f"{_shown(r.other_value, r.threshold)} {r.other_verdict}" if r.other_verdict
        else "—",
        "change": _change(r),
    }  # fmt: skip


def _picture(pictures: str | None, paper: str, fig: str) -> str | None:
    return None if pictures is None else f"{pictures}/{paper}/{fig}.png"


def comparison_markdown(df: pd.DataFrame, about: dict, pictures: str | None = None) -> str:
    """The comparison in Markdown: the headline (:func:`headline`), then per figure its picture
    (``pictures``: the pairs' folder relative to the page) and a table of its claims — id, kind,
    statement and threshold (each run's where they differ), each run's value and verdict, the
    change of value and whether the verdict changed."""
    out = ["# Comparison with the reference run", "", *headline(df, about), ""]
    if pictures is not None:
        out += [f"Each figure's picture (`{pictures}/<paper>/<fig>.png`, PDF beside it): the "
                "reference run and this run on shared axes, what moved between them, and each "
                "claim's value in both against its threshold.", ""]  # fmt: skip
    for (paper, fig), g in df.groupby(["paper", "figure"], sort=False):
        n = int(g.verdict_changed.sum())
        out += [f"## {paper} {fig}" + (f" — {n} verdict(s) changed" if n else ""), ""]
        png = _picture(pictures, paper, fig)
        if png:
            out += [f"![{paper} {fig}: the reference run beside this run]({png}) "
                    f"([PNG]({png}), [PDF]({png[:-4]}.pdf))", ""]  # fmt: skip
        out += [
            "| claim | kind | statement | threshold | reference | this run | change | "
            "verdict changed |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in g.itertuples():
            c = {k: v.replace("|", "\\|") for k, v in _cells(r).items()}
            mark = "**yes**" if r.verdict_changed else ""
            oth = f"**{c['other']}**" if r.verdict_changed and r.other_verdict else c["other"]
            out.append(f"| `{r.claim}` | {r.kind} | {c['statement']} | {c['threshold']} | "
                       f"{c['reference']} | {oth} | {c['change']} | {mark} |")  # fmt: skip
        out.append("")
    return "\n".join(out)


def comparison_html(df: pd.DataFrame, about: dict, pictures: str | None = None) -> str:
    """The report's page: the same tables, wrapped to the page's width (no horizontal scroll; the
    claim's kind under its id, each run's statement on its own line where they differ, a row whose
    verdict changed shaded), each figure's picture linked (``pictures``, relative: it opens from the
    run's folder; in the report the pictures are the entries beside this page)."""
    e = html.escape
    style = (
        "<style>body{font-family:system-ui,sans-serif;font-size:13px;margin:12px;color:#111}"
        "table{border-collapse:collapse;table-layout:fixed;width:100%;margin:6px 0 14px}"
        "td,th{border:1px solid #ccc;padding:3px 5px;text-align:left;overflow-wrap:anywhere;"
        "vertical-align:top}th{background:#eee}tr.changed td{background:#fde2c4}"
        "code{font-size:12px}span.kind{display:block;color:#555;font-size:11px}"
        "span.run{color:#555}</style>"
    )
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Comparison with the "
           f"reference run</title>{style}</head><body><h2>Comparison with the reference run</h2>"]
    out += [
        f"<p>{e(line.replace('**', '').replace('`', ''))}</p>"
        for line in headline(df, about)
        if line
    ]
    widths = [("claim", 19), ("statement", 31), ("threshold", 14), ("reference", 13),
              ("this run", 13), ("change", 10)]  # fmt: skip

    def both(ref: str, oth: str) -> str:
        if not ref or ref == oth:
            return e(oth)
        return (f"<span class='run'>reference:</span> {e(ref)}<br>"
                f"<span class='run'>this run:</span> {e(oth)}")  # fmt: skip

    for (paper, fig), g in df.groupby(["paper", "figure"], sort=False):
        n = int(g.verdict_changed.sum())
        out.append(f"<h3>{e(paper)} {e(fig)}" + (f" — {n} verdict(s) changed" if n else "")
                   + "</h3>")  # fmt: skip
        png = _picture(pictures, paper, fig)
        if png:
            out.append(f"<p>Picture: <a href='{e(png)}'>{e(png)}</a> (in the report: the entry "
                       f"{e(paper)} {e(fig)} beside this page)</p>")  # fmt: skip
        out.append("<table><colgroup>" + "".join(f"<col style='width:{w}%'>" for _, w in widths)
                   + "</colgroup><tr>" + "".join(f"<th>{e(h)}</th>" for h, _ in widths)
                   + "</tr>")  # fmt: skip
        for r in g.itertuples():
            c = _cells(r)
            cls = " class='changed'" if r.verdict_changed else ""
            out.append(
                f"<tr{cls}><td><code>{e(r.claim).replace('_', '_<wbr>')}</code>"
                f"<span class='kind'>{e(r.kind)}"
                f"{' · verdict changed' if r.verdict_changed else ''}</span></td>"
                f"<td>{both(_words(r.reference_statement), _words(r.statement))}</td>"
                f"<td>{both(_words(r.reference_threshold), _words(r.threshold))}</td>"
                f"<td>{e(c['reference'])}</td><td>{e(c['other'])}</td><td>{e(c['change'])}</td>"
                "</tr>"
            )
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
