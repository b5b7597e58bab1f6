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

from pathlib import Path

import pandas as pd

from .core import KINDS, NOT_MEASURABLE, VERDICTS
from .summary_html import summary_html
from .summary_table import (  # noqa: F401  (re-exported: the table, its counts and words)
    COLUMNS,
    COUNTED,
    INCONCLUSIVE_MEANING,
    KIND_LABEL,
    KIND_MEANING,
    MARK,
    VOID_BY,
    VOID_MEANING,
    _control_cell,
    _control_line,
    _controlled,
    _full,
    _kind_counts,
    _md_row,
    _measured,
    _paper_cell,
    _sanity_cell,
    _shows_line,
    _void_line,
    _why,
    _words,
    counts,
    headline,
    shown,
    summary_table,
    void_groups,
)


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
                  + (f"; {r.to_resolve}" if getattr(r, "to_resolve", "") else "")
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
