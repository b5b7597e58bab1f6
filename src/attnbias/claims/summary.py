"""The claims summary table (all papers) and the strict gate."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

COLUMNS = ["paper", "figure", "preset", "claim", "statement", "value", "threshold", "verdict"]


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list) and len(v) > 6:
        return json.dumps(v[:6])[:-1] + ", …]"
    return json.dumps(v) if not isinstance(v, str) else v


def summary_table(claim_files) -> pd.DataFrame:
    rows = []
    for f in claim_files:
        doc = json.loads(Path(f).read_text())
        for c in doc["claims"]:
            rows.append(
                {
                    "paper": doc["paper"],
                    "figure": doc["figure"],
                    "preset": doc.get("preset"),
                    "claim": c["id"],
                    "statement": c["statement"],
                    "value": _fmt(c["value"]),
                    "threshold": c["threshold"],
                    "verdict": "PASS" if c["passed"] else "FAIL",
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def write_summary(claim_files, md_path, csv_path) -> int:
    """Write the summary; return the number of failed claims."""
    df = summary_table(claim_files)
    df.to_csv(csv_path, index=False)
    n_fail = int((df["verdict"] == "FAIL").sum())
    lines = [
        "# Claims summary",
        "",
        f"{len(df)} claims checked, {len(df) - n_fail} passed, {n_fail} failed.",
        "",
    ]
    if n_fail:
        lines += ["## Failed claims", ""]
        for _, r in df[df["verdict"] == "FAIL"].iterrows():
            lines.append(
                f"- **{r.paper} {r.figure} `{r.claim}`**: {r.statement} — measured {r.value}, "
                f"threshold {r.threshold}"
            )
        lines.append("")
    lines += ["## All claims", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for _, r in df.iterrows():
        cells = [str(r[c]).replace("|", "\\|") for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    Path(md_path).write_text("\n".join(lines) + "\n")
    return n_fail


def gate(summary_csv, ok_path) -> None:
    df = pd.read_csv(summary_csv)
    failed = df[df["verdict"] == "FAIL"]
    if len(failed):
        msg = "\n".join(
            f"  {r.paper} {r.figure} {r.claim}: {r.value} (threshold {r.threshold})"
            for r in failed.itertuples()
        )
        raise SystemExit(f"claims_strict: {len(failed)} claim(s) failed:\n{msg}")
    Path(ok_path).write_text(f"{len(df)} claims passed\n")
