"""A run beside the reference run (``snakemake compare``): for each figure a change touches, every
claim's value and verdict in both runs, joined by the claim's id (ids carry no setting values:
:mod:`attnbias.claims.ids`), and whether the verdict changed.

Written into the other run's folder: ``compare.md`` (the changed settings first, then the figures
whose claims changed verdict, then the others), ``compare.csv`` with its JSON sidecar documenting
every column (:func:`attnbias.io.save_data`), and ``compare.html`` (the report's page).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from ..io import save_data
from .core import read_claims

COLUMNS = {
    "paper": "the paper (attnbias.workflow.PAPERS)",
    "figure": "the figure of that paper",
    "claim": "the claim's id, the same in both runs",
    "kind": "paper (a claim of the paper), sanity (a check that the run is valid) or identity",
    "statement": "what the claim measures, in the other run's words (its settings' values)",
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


def write_comparison(df: pd.DataFrame, about: dict, md_path, csv_path, html_path) -> None:
    """Write the comparison ``df`` (:func:`comparison`) as Markdown, CSV (+ sidecar) and HTML.

    ``about``: ``label`` (what this run is, "custom: maxmargin.fig1.steps 500, default 1000"),
    ``reference`` and ``other`` (the folders), ``changes`` (one ``{setting, default, used}`` per
    changed setting), ``missing`` (the figures whose reference is not built) and ``build`` (the
    command that builds them)."""
    save_data(df, {"columns": COLUMNS, **about}, csv_path)
    Path(md_path).write_text(comparison_markdown(df, about))
    Path(html_path).write_text(comparison_html(df, about))


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


def comparison_markdown(df: pd.DataFrame, about: dict) -> str:
    out = ["# Comparison with the reference run", "", *headline(df, about), ""]
    for (paper, fig), g in df.groupby(["paper", "figure"], sort=False):
        n = int(g.verdict_changed.sum())
        out += [
            f"## {paper} {fig}" + (f" — {n} verdict(s) changed" if n else ""),
            "",
            "| claim | kind | statement | reference | this run | changed |",
            "|---|---|---|---|---|---|",
        ]
        for r in g.itertuples():
            ref = f"{r.reference_value} ({r.reference_verdict})" if r.reference_verdict else "—"
            oth = f"{r.other_value} ({r.other_verdict})" if r.other_verdict else "—"
            mark = "**yes**" if r.verdict_changed else ""
            statement = r.statement.replace("|", "\\|")
            out.append(f"| `{r.claim}` | {r.kind} | {statement} | {ref} | {oth} | {mark} |")
        out.append("")
    return "\n".join(out)


def comparison_html(df: pd.DataFrame, about: dict) -> str:
    """The report's page: the same table, wrapped to the page's width (no horizontal scroll)."""
    e = html.escape
    style = (
        "<style>body{font-family:sans-serif;max-width:100%}table{border-collapse:collapse;"
        "table-layout:fixed;width:100%}td,th{border:1px solid #ccc;padding:2px 4px;"
        "overflow-wrap:anywhere;vertical-align:top}.changed{background:#fde2c4}</style>"
    )
    out = [style, "<h2>Comparison with the reference run</h2>"]
    out += [
        f"<p>{e(line.replace('**', '').replace('`', ''))}</p>"
        for line in headline(df, about)
        if line
    ]
    for (paper, fig), g in df.groupby(["paper", "figure"], sort=False):
        out.append(
            f"<h3>{e(paper)} {e(fig)}</h3><table><tr><th>claim</th><th>statement</th>"
            "<th>reference</th><th>this run</th></tr>"
        )
        for r in g.itertuples():
            cls = ' class="changed"' if r.verdict_changed else ""
            out.append(
                f"<tr{cls}><td>{e(r.claim)}</td><td>{e(r.statement)}</td>"
                f"<td>{e(r.reference_value)} {e(r.reference_verdict)}</td>"
                f"<td>{e(r.other_value)} {e(r.other_verdict)}</td></tr>"
            )
        out.append("</table>")
    return "\n".join(out) + "\n"
