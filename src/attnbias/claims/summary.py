"""The claims summary table (all papers) and the strict gate.

Counts are kept apart by kind (:data:`attnbias.claims.core.KINDS`): **paper** claims are the
evidence and come first, **sanity** checks (the run is valid) are counted separately, and
**identities** (true by construction) are listed but never counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .core import KINDS

COLUMNS = [
    "paper", "figure", "preset", "control", "kind", "claim", "statement", "value", "threshold",
    "verdict",
]  # fmt: skip
KIND_LABEL = {"paper": "Paper claims", "sanity": "Sanity checks", "identity": "Identities"}
KIND_MEANING = {
    "paper": "a statement the paper makes, measured on this run: the reproduction evidence",
    "sanity": "the run is valid (trained, converged, solver feasible and accurate, hypotheses "
    "met); not evidence for the paper",
    "identity": "true by construction for any input (kept only to document a plotted bound); "
    "never counted",
}


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list) and len(v) > 6:
        return json.dumps(v[:6])[:-1] + ", …]"
    return json.dumps(v) if not isinstance(v, str) else v


def summary_table(claim_files) -> pd.DataFrame:
    """One row per claim; within a figure, paper claims first, then sanity, then identities."""
    rows = []
    for f in claim_files:
        doc = json.loads(Path(f).read_text())
        for c in doc["claims"]:
            if c.get("kind") not in KINDS:
                raise ValueError(f"{f}: claim {c.get('id')!r} has no valid kind ({KINDS})")
            rows.append(
                {
                    "paper": doc["paper"],
                    "figure": doc["figure"],
                    "preset": doc.get("preset"),
                    "control": doc.get("control", "none"),
                    "kind": c["kind"],
                    "claim": c["id"],
                    "statement": c["statement"],
                    "value": _fmt(c["value"]),
                    "threshold": c["threshold"],
                    "verdict": "PASS" if c["passed"] else "FAIL",
                }
            )
    df = pd.DataFrame(rows, columns=COLUMNS)
    order = df["kind"].map({k: i for i, k in enumerate(KINDS)})
    df = df.assign(_k=order).sort_values(["paper", "figure", "_k"], kind="stable")
    return df.drop(columns="_k").reset_index(drop=True)


def counts(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: passed / total of paper claims, of sanity checks, and the number of identities."""
    out = []
    for key, g in df.groupby(by, sort=True) if by else [((), df)]:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True))
        for kind in ("paper", "sanity"):
            k = g[g.kind == kind]
            row[f"{kind}_passed"] = int((k.verdict == "PASS").sum())
            row[f"{kind}_total"] = len(k)
        row["identities"] = int((g.kind == "identity").sum())
        out.append(row)
    cols = [*by, "paper_passed", "paper_total", "sanity_passed", "sanity_total", "identities"]
    return pd.DataFrame(out, columns=cols)


def _ratio(row, kind: str) -> str:
    p, t = row[f"{kind}_passed"], row[f"{kind}_total"]
    return f"{p}/{t}" + ("" if p == t else f" ({t - p} failed)")


def headline(df: pd.DataFrame) -> str:
    """E.g. "Paper claims: 120/131 passed (11 failed).  Sanity checks: 40/40 passed (0 failed).
    Identities (not evidence): 5." — the evidence first, never pooled with the rest."""
    c = counts(df, []).iloc[0]
    parts = []
    for kind in ("paper", "sanity"):
        p, t = int(c[f"{kind}_passed"]), int(c[f"{kind}_total"])
        parts.append(f"{KIND_LABEL[kind]}: {p}/{t} passed ({t - p} failed).")
    parts.append(f"Identities (not evidence): {int(c['identities'])}.")
    return "  ".join(parts)


def _md_row(cells) -> str:
    return "| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |"


def write_summary(claim_files, md_path, csv_path, shows=None) -> int:
    """Write the summary; return the number of failed claims that gate the run (paper and
    sanity; a failed identity is a bug and gates too, see :func:`gate`).  ``shows``: which run the
    claims are from (``preset``, ``control``, ``seed``, ``folder``), said in the summary's first
    line."""
    df = summary_table(claim_files)
    df.to_csv(csv_path, index=False)
    failed = df[df.verdict == "FAIL"]
    controlled = sorted({f"{r.paper} {r.figure}" for r in df.itertuples() if r.control != "none"})
    lines = [
        "# Claims summary",
        "",
        *(
            [
                f"Results of the **{shows['preset']}** preset, control `{shows['control']}`, "
                f"seed shift {shows['seed']}, in `{shows['folder']}/`.",
                "",
            ]
            if shows
            else []
        ),
        *(
            [
                "**NEGATIVE CONTROL RUN** (`--config control=null`) for "
                f"{len(controlled)} figures ({', '.join(controlled)}): their data were made with "
                "the paper's mechanism removed, so their paper claims are EXPECTED TO FAIL and "
                "their sanity checks to pass (see `violations` in the strict gate).",
                "",
            ]
            if controlled
            else []
        ),
        f"**{headline(df)}**",
        "",
        *(f"- **{KIND_LABEL[k].lower()}**: {KIND_MEANING[k]}" for k in KINDS),
        "",
        "## Per paper",
        "",
        _md_row(["paper", "paper claims passed", "sanity checks passed",
                 "identities (not counted)"]),  # fmt: skip
        "|---|---|---|---|",
    ]
    for _, r in counts(df, ["paper"]).iterrows():
        lines.append(_md_row([r.paper, _ratio(r, "paper"), _ratio(r, "sanity"), r.identities]))
    lines += [
        "",
        "## Per figure",
        "",
        _md_row(["paper", "figure", "preset", "control", "paper claims passed",
                 "sanity checks passed", "identities (not counted)"]),  # fmt: skip
        "|---|---|---|---|---|---|---|",
    ]
    first = df.groupby(["paper", "figure"])[["preset", "control"]].first()
    for _, r in counts(df, ["paper", "figure"]).iterrows():
        f = first.loc[(r.paper, r.figure)]
        lines.append(
            _md_row([r.paper, r.figure, f.preset, f.control, _ratio(r, "paper"),
                     _ratio(r, "sanity"), r.identities])  # fmt: skip
        )
    lines.append("")
    for kind in KINDS:
        f = failed[failed.kind == kind]
        if not len(f):
            continue
        lines += [f"## Failed {KIND_LABEL[kind].lower()}", ""]
        for _, r in f.iterrows():
            lines.append(
                f"- **{r.paper} {r.figure} `{r.claim}`**: {r.statement} — measured {r.value}, "
                f"threshold {r.threshold}"
            )
        lines.append("")
    cols = [c for c in COLUMNS if c not in ("preset", "control")]
    lines += ["## All claims", "", _md_row(cols), "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append(_md_row([r[c] for c in cols]))
    Path(md_path).write_text("\n".join(lines) + "\n")
    return len(failed)


def read_summary(summary_csv) -> pd.DataFrame:
    """The summary CSV as written: no NA parsing (the control's value "null" is a word here)."""
    return pd.read_csv(summary_csv, keep_default_na=False)


def violations(df: pd.DataFrame) -> pd.DataFrame:
    """The claims that make a strict run fail.  Normally every failed claim (a failed identity can
    only mean a bug).  For a figure made under the negative control (``control`` not "none") the
    expectation of its paper claims is reversed: a paper claim that PASSES there survives the
    removal of the paper's mechanism, so it is not evidence; its sanity checks must still pass."""
    control = df["control"] if "control" in df else pd.Series("none", df.index)
    controlled = control != "none"
    passed = df["verdict"] == "PASS"
    paper = df["kind"] == "paper"
    bad = (~controlled & ~passed) | (controlled & paper & passed) | (controlled & ~paper & ~passed)
    return df[bad]


def gate(summary_csv, ok_path) -> None:
    """claims_strict: fail on any failed paper claim or sanity check (and on a failed identity,
    which can only mean a bug); under the negative control, on a paper claim that passes or a
    sanity check that fails (:func:`violations`).  The message lists them by kind."""
    df = read_summary(summary_csv)
    if "kind" not in df:
        raise SystemExit(f"claims_strict: {summary_csv} has no 'kind' column (stale summary)")
    failed = violations(df)
    if len(failed):
        msg = []
        for kind in KINDS:
            for r in failed[failed.kind == kind].itertuples():
                why = (
                    "passes under the negative control"
                    if getattr(r, "control", "none") not in ("none", None) and r.verdict == "PASS"
                    else "failed"
                )
                msg.append(
                    f"  [{kind}] {r.paper} {r.figure} {r.claim} {why}: {r.value} "
                    f"(threshold {r.threshold})"
                )
        by = ", ".join(f"{(failed.kind == k).sum()} {k}" for k in KINDS if (failed.kind == k).any())
        what = "failed" if "control" not in df or (df.control == "none").all() else (
            "against expectation"
        )
        raise SystemExit(f"claims_strict: {len(failed)} claim(s) {what} ({by}):\n" + "\n".join(msg))
    Path(ok_path).write_text(headline(df) + "\n")
